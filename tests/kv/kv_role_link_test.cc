// kv_role_link_test.cc: SetRole moving this side's listener (LLM-DataDist's
// default backend) or keeping it (its hixl backend), with nothing
// registered lost.
#include <chrono>
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

INSTANTIATE_TEST_SUITE_P(Nets, KvRoleLinkTest, KvAllNets(), KvNetName);

}  // namespace
}  // namespace hixl_test
