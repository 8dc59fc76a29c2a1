// kv_role_link_test.cc: SetRole moving this side's listener (LLM-DataDist's
// default backend) or keeping it (its hixl backend), with nothing
// registered lost; and Link with a rank table between this process and
// kv_test_peer: both call it, then each pulls from the other, bytes checked;
// a member that is never reached fails it and leaves nothing linked.
#include <chrono>
#include <cstring>
#include <string>

#include "kv/kv_fixture.h"
#include "support/free_port.h"

namespace hixl_test {
namespace {

constexpr uint64_t kSeed = 5;
const std::vector<int64_t> kDims{16, 4, 128};  // 16 blocks of 1 KiB (bf16)
constexpr size_t kUnit = 1024;
const std::vector<uint64_t> kBlocks{1, 5, 6, 15};

uint64_t Seeded(uint64_t seed) {
  return ExpectedDigest(seed, 0, 4, kUnit, kBlocks, [](size_t t) { return t; }, [](size_t k) { return kBlocks[k]; });
}

class KvRoleLinkTest : public KvTest {
 protected:
  bool v6() const { return GetParam().v6; }
  std::string Ip() const { return v6() ? "::1" : "127.0.0.1"; }
  std::string At(uint16_t port) const { return (v6() ? "[::1]:" : "127.0.0.1:") + std::to_string(port); }
  uint16_t Free() const { return static_cast<uint16_t>(FreePort(v6() ? AF_INET6 : AF_INET)); }
  std::map<ld::AscendString, ld::AscendString> ListenAt(uint16_t port) const {
    return {{ld::OPTION_LISTEN_IP_INFO, At(port).c_str()}};
  }

  // Whether something accepts a TCP connection at the loopback port.
  bool Listening(uint16_t port) const {
    const int fd = socket(v6() ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (v6()) {
      auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_loopback;
      a->sin6_port = htons(port);
      len = sizeof(*a);
    } else {
      auto *a = reinterpret_cast<sockaddr_in *>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a->sin_port = htons(port);
      len = sizeof(*a);
    }
    const bool ok = connect(fd, reinterpret_cast<sockaddr *>(&ss), len) == 0;
    close(fd);
    return ok;
  }

  // The peer links to this side (cluster kLocalCluster) at `port`: its reply.
  std::string PeerLinksHere(uint16_t port) {
    return peer_.Command("LINK " + std::to_string(kLocalCluster) + " " + Ip() + " " + std::to_string(port));
  }

  // This side pushes kBlocks of `from` into the peer's cache `to`; true if
  // they landed there with `from`'s bytes (seed).
  bool PushLands(const LocalKv &from, int64_t to, uint64_t seed) {
    return dd_.PushKvBlocks(from.cache, PeerIndex(to), kBlocks, kBlocks) == ld::LLM_SUCCESS &&
           PeerDigest(to, 0, 4, kBlocks) == Seeded(seed);
  }

  // A rank table of HCCL's form: (ip, port) per rank.
  std::string RankTable(const std::vector<std::pair<std::string, uint16_t>> &ranks) const {
    std::string servers;
    for (size_t r = 0; r < ranks.size(); ++r) {
      servers += std::string(r ? "," : "") + "{\"device\":[{\"device_id\":\"0\",\"device_ip\":\"" + ranks[r].first +
                 "\",\"device_port\":\"" + std::to_string(ranks[r].second) + "\",\"rank_id\":\"" +
                 std::to_string(r) + "\"}],\"server_id\":\"" + std::to_string(r) + "\"}";
    }
    return "{\"server_count\":\"" + std::to_string(ranks.size()) + "\",\"server_list\":[" + servers +
           "],\"status\":\"completed\",\"version\":\"1.0\"}";
  }
};

TEST_P(KvRoleLinkTest, SetRoleMovesTheListener) {
  auto local = MakeLocal(4, kDims, kSeed);  // registered while this side is a client
  const int64_t remote = PeerCache("4 27 0 sep 16,4,128");
  ASSERT_GT(remote, 0);
  const uint16_t p1 = Free(), p2 = Free();
  ASSERT_EQ(dd_.SetRole(ld::LlmRole::kPrompt, ListenAt(p1)), ld::LLM_SUCCESS);
  EXPECT_TRUE(Listening(p1));
  EXPECT_EQ(PeerLinksHere(p1), "OK");  // the peer finds this side's table there
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  EXPECT_TRUE(PushLands(*local, remote, kSeed));  // the cache registered before the move is still registered
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kPrompt, ListenAt(p2)), ld::LLM_EXIST_LINK);
  EXPECT_TRUE(Listening(p1));
  ASSERT_EQ(Unlink(), ld::LLM_SUCCESS);

  // To another port: the first one closes. (A link the peer made to this
  // side is the peer's own: this side does not see it, and it breaks.)
  ASSERT_EQ(dd_.SetRole(ld::LlmRole::kPrompt, ListenAt(p2)), ld::LLM_SUCCESS);
  EXPECT_FALSE(Listening(p1));
  EXPECT_TRUE(Listening(p2));
  EXPECT_EQ(peer_.Command("UNLINK " + std::to_string(kLocalCluster)), "OK");
  EXPECT_NE(PeerLinksHere(p1), "OK");
  EXPECT_EQ(PeerLinksHere(p2), "OK");
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kMix, ListenAt(p2)), ld::LLM_SUCCESS);  // the same address: nothing moves
  EXPECT_TRUE(Listening(p2));

  // To a decoder: no port at all.
  ASSERT_EQ(dd_.SetRole(ld::LlmRole::kDecoder), ld::LLM_SUCCESS);
  EXPECT_FALSE(Listening(p2));
  EXPECT_EQ(peer_.Command("UNLINK " + std::to_string(kLocalCluster)), "OK");
  EXPECT_NE(PeerLinksHere(p2), "OK");

  // Still a working client, its caches in its third engine: a pull lands.
  EXPECT_EQ(peer_.Command("FILL " + std::to_string(remote) + " 11"), "OK");
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, kBlocks, kBlocks), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 4, kUnit, kBlocks), Seeded(11));
}

TEST_P(KvRoleLinkTest, RefusedSetRoleKeepsEverything) {
  auto local = MakeLocal(4, kDims, kSeed);
  const int64_t remote = PeerCache("4 27 0 sep 16,4,128");
  const uint16_t p1 = Free();
  ASSERT_EQ(dd_.SetRole(ld::LlmRole::kPrompt, ListenAt(p1)), ld::LLM_SUCCESS);
  // The peer's own address is taken: the new engine does not start.
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kPrompt, {{ld::OPTION_LISTEN_IP_INFO, peer_.name().c_str()}}), ld::LLM_FAILED);
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kPrompt, {{ld::OPTION_LISTEN_IP_INFO, "nonsense"}}), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kEnd, ListenAt(Free())), ld::LLM_PARAM_INVALID);
  EXPECT_TRUE(Listening(p1));
  EXPECT_EQ(PeerLinksHere(p1), "OK");
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  EXPECT_TRUE(PushLands(*local, remote, kSeed));
}

TEST_P(KvRoleLinkTest, HixlBackendKeepsItsAddress) {
  const uint16_t p = Free();
  auto opts = KvOptions(GetParam().transport, At(p));
  opts[ld::OPTION_TRANSFER_BACKEND] = "hixl";
  ld::LlmDataDist h(9, ld::LlmRole::kPrompt);
  ASSERT_EQ(h.Initialize(opts), ld::LLM_SUCCESS);
  EXPECT_EQ(h.SetRole(ld::LlmRole::kDecoder), ld::LLM_SUCCESS);
  EXPECT_TRUE(Listening(p));  // as LLM-DataDist's hixl backend: the listener stays
  EXPECT_EQ(h.SetRole(ld::LlmRole::kPrompt, ListenAt(Free())), ld::LLM_FEATURE_NOT_ENABLED);
  EXPECT_EQ(h.SetRole(ld::LlmRole::kPrompt, ListenAt(p)), ld::LLM_SUCCESS);
  std::vector<ld::Status> rets;
  ASSERT_EQ(h.LinkLlmClusters({PeerInfo()}, rets, 10000), ld::LLM_SUCCESS);
  EXPECT_EQ(h.SetRole(ld::LlmRole::kDecoder), ld::LLM_SUCCESS);  // links do not matter there
  EXPECT_TRUE(Listening(p));
  uint64_t comm = 0;
  EXPECT_EQ(h.Link("c", {{9, 0}, {kPeerCluster, 1}}, RankTable({{Ip(), p}, {Ip(), peer_port_}}).c_str(), comm),
            ld::LLM_FEATURE_NOT_ENABLED);
  // Its RDMA classes go to hixl, which refuses what it cannot use; the
  // default backend takes any uint32 (and applies what RDMA can use).
  ld::LlmDataDist strict(10, ld::LlmRole::kPrompt), loose(11, ld::LlmRole::kPrompt);
  opts = KvOptions(GetParam().transport);
  opts["llm.RdmaServiceLevel"] = "100";
  opts["llm.RdmaTrafficClass"] = "100";
  EXPECT_EQ(loose.Initialize(opts), ld::LLM_SUCCESS);
  opts[ld::OPTION_TRANSFER_BACKEND] = "hixl";
  EXPECT_EQ(strict.Initialize(opts), ld::LLM_PARAM_INVALID);
}

TEST_P(KvRoleLinkTest, LinkWithARankTable) {
  const int64_t remote = PeerCache("4 27 " + std::to_string(kSeed) + " sep 16,4,128");
  const int64_t peer_dst = PeerCache("4 27 0 sep 16,4,128");
  ASSERT_GT(peer_dst, 0);
  auto local = MakeLocal(4, kDims, 0);
  auto local_src = MakeLocal(4, kDims, kSeed + 1);
  const uint16_t q = Free();
  // Rank 0: the peer, where it listens already; rank 1: this side, which
  // listens nowhere yet.
  const std::string table = RankTable({{Ip(), peer_port_}, {Ip(), q}});
  const std::map<uint64_t, uint32_t> ranks{{kPeerCluster, 0}, {kLocalCluster, 1}};
  for (int round = 0; round < 2; ++round) {  // link, unlink, and again
    ASSERT_TRUE(peer_.Send("COMMLINK link 1:0,2:1 20000 " + table));
    uint64_t comm = 0;
    ASSERT_EQ(dd_.Link("link", ranks, table.c_str(), comm, 20000), ld::LLM_SUCCESS);
    auto reply = Words(peer_.ReadLine());
    ASSERT_EQ(reply.size(), 2u);
    ASSERT_EQ(reply[0], "OK");
    EXPECT_EQ(comm, static_cast<uint64_t>(round + 1));
    EXPECT_TRUE(Listening(q));
    ld::RegisterMemStatus st = ld::RegisterMemStatus::kFailed;
    EXPECT_EQ(dd_.QueryRegisterMemStatus(comm, st), ld::LLM_SUCCESS);
    EXPECT_EQ(st, ld::RegisterMemStatus::kOk);

    // Each side pulls from the other.
    for (uint64_t a : local->memory->addrs()) std::memset(reinterpret_cast<void *>(a), 0, local->tensor_bytes);
    ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, kBlocks, kBlocks), ld::LLM_SUCCESS);
    EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 4, kUnit, kBlocks), Seeded(kSeed));
    EXPECT_EQ(peer_.Command("FILL " + std::to_string(peer_dst) + " 0"), "OK");
    EXPECT_EQ(peer_.Command("PULLB " + std::to_string(kLocalCluster) + " " + std::to_string(local_src->cache.cache_id) +
                            " " + std::to_string(peer_dst) + " " + JoinIds(kBlocks)),
              "OK");
    EXPECT_EQ(PeerDigest(peer_dst, 0, 4, kBlocks), Seeded(kSeed + 1));

    std::vector<ld::Status> rets;
    EXPECT_EQ(dd_.LinkLlmClusters({PeerInfo()}, rets, 5000), ld::LLM_ALREADY_LINK);
    EXPECT_EQ(dd_.SetRole(ld::LlmRole::kDecoder), ld::LLM_EXIST_LINK);
    uint64_t again = 0;
    EXPECT_EQ(dd_.Link("link2", ranks, table.c_str(), again, 2000), ld::LLM_ALREADY_LINK);

    ASSERT_EQ(dd_.Unlink(comm), ld::LLM_SUCCESS);
    EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, kBlocks, kBlocks), ld::LLM_NOT_YET_LINK);
    EXPECT_EQ(dd_.Unlink(comm), ld::LLM_NOT_YET_LINK);
    EXPECT_EQ(dd_.QueryRegisterMemStatus(comm, st), ld::LLM_NOT_YET_LINK);
    EXPECT_EQ(peer_.Command("COMMUNLINK " + reply[1]), "OK");
  }
}

TEST_P(KvRoleLinkTest, LinkFailuresLeaveNothingLinked) {
  const int64_t remote = PeerCache("4 27 " + std::to_string(kSeed) + " sep 16,4,128");
  auto local = MakeLocal(4, kDims, 0);
  const std::string table = RankTable({{Ip(), peer_port_}, {Ip(), Free()}});
  const std::map<uint64_t, uint32_t> two{{kPeerCluster, 0}, {kLocalCluster, 1}};
  uint64_t comm = 0;
  const auto link = [&](const std::string &name, const std::map<uint64_t, uint32_t> &ranks, const std::string &t,
                        int32_t ms = 2000) { return dd_.Link(name.c_str(), ranks, t.c_str(), comm, ms); };
  EXPECT_EQ(link("", two, table), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(link(std::string(128, 'a'), two, table), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(link("c", {{kLocalCluster, 1}}, table), ld::LLM_PARAM_INVALID);  // one member
  EXPECT_EQ(link("c", {{1, 0}, {2, 1}, {3, 2}, {4, 3}, {5, 4}}, table), ld::LLM_PARAM_INVALID);  // five
  EXPECT_EQ(link("c", {{kPeerCluster, 0}, {7, 1}}, table), ld::LLM_PARAM_INVALID);  // this cluster is not in it
  EXPECT_EQ(link("c", {{kPeerCluster, 0}, {kLocalCluster, 0}}, table), ld::LLM_PARAM_INVALID);  // one rank twice
  EXPECT_EQ(link("c", two, table, 0), ld::LLM_PARAM_INVALID);
  // Tables HCCL would refuse: LLM_LINK_FAILED, as in LLM-DataDist.
  EXPECT_EQ(link("c", two, "not json"), ld::LLM_LINK_FAILED);
  EXPECT_EQ(link("c", two, "{\"server_list\":[{\"device\":[{}]}]}"), ld::LLM_LINK_FAILED);
  EXPECT_EQ(link("c", {{kPeerCluster, 0}, {kLocalCluster, 7}}, table), ld::LLM_LINK_FAILED);  // no rank 7
  EXPECT_EQ(link("c", two, RankTable({{Ip(), peer_port_}, {"localhost", Free()}})), ld::LLM_LINK_FAILED);
  std::string bad_port = table;
  bad_port.replace(bad_port.find("\"device_port\":\""), 15, "\"device_port\":\"7");  // a port of 6 digits
  EXPECT_EQ(link("c", two, bad_port), ld::LLM_LINK_FAILED);

  // Three members, one of which never comes: the two others fail within
  // the time given, and neither is linked to the other afterwards.
  const std::string three = RankTable({{Ip(), peer_port_}, {Ip(), Free()}, {Ip(), Free()}});
  ASSERT_TRUE(peer_.Send("COMMLINK c3 1:0,2:1,3:2 3000 " + three));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(link("c3", {{kPeerCluster, 0}, {kLocalCluster, 1}, {3, 2}}, three, 2000), ld::LLM_LINK_FAILED);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, 1.9);
  EXPECT_LT(took, 30.0);  // the deadline, with slack for a loaded machine
  const auto reply = Words(peer_.ReadLine());
  EXPECT_TRUE(!reply.empty() && reply[0] == "ERR") << "the peer's Link did not fail";
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, kBlocks, kBlocks), ld::LLM_NOT_YET_LINK);
  ld::RegisterMemStatus st;
  EXPECT_EQ(dd_.QueryRegisterMemStatus(1, st), ld::LLM_NOT_YET_LINK);
  EXPECT_EQ(Link(), ld::LLM_SUCCESS);  // not ALREADY_LINK: nothing was left
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, kBlocks, kBlocks), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 4, kUnit, kBlocks), Seeded(kSeed));
}

INSTANTIATE_TEST_SUITE_P(Nets, KvRoleLinkTest, KvAllNets(), KvNetName);

}  // namespace
}  // namespace hixl_test
