// ucx_test.cc: the ucx transport between two processes (over UCX's tcp and
// shared memory: this machine has no RDMA): which links choose it, notifies
// ordered after their data, a frozen and a killed target. The shared suites
// (TransferTest, NotifyTest, FailureTest, RevokeTest) run over it too.
#ifdef HIXL_TEST_UCX

#include <dirent.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>

#include "integration/failure_fixture.h"
#include "integration/fixture.h"

namespace hixl_test {
namespace {

#ifdef __SANITIZE_THREAD__
constexpr double kSlack = 4.0;  // TSan slows everything 5-15x
#else
constexpr double kSlack = 1.0;
#endif

bool HostHasRdmaDevice() {
  DIR *d = opendir("/sys/class/infiniband");
  if (d == nullptr) return false;
  bool any = false;
  while (dirent *e = readdir(d)) any = any || e->d_name[0] != '.';
  closedir(d);
  return any;
}

std::string TransportOf(hixl::Hixl &e, const std::string &remote) {
  hixl::AscendString t;
  if (e.GetLinkTransport(remote.c_str(), t) != hixl::SUCCESS) return "(none)";
  return t.GetString();
}

std::map<hixl::AscendString, hixl::AscendString> Config(const std::string &json) { return ResourceConfig(json); }

// A target that runs ucx (its protocol_desc names it), over UCX's tcp.
constexpr char kUcxTarget[] =
    R"({"comm_resource_config.protocol_desc": ["ucx:host", "shm:host", "tcp:host"], "ucx.tls": "tcp",
        "ucx.net_devices": "lo"})";

TEST(UcxSelect, ADefaultLinkOnAHostWithoutRdmaLeavesUcxOut) {
  if (HostHasRdmaDevice()) GTEST_SKIP() << "this host has an RDMA device: ucx may be chosen by default";
  PeerProcess peer;
  ASSERT_TRUE(peer.Start(false, kUcxTarget));
  // Without an RDMA device a default engine has no ucx transport (it logs
  // why at Initialize): the link takes shm, though the target offers ucx.
  hixl::Hixl plain;
  ASSERT_EQ(plain.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  ASSERT_EQ(plain.Connect(peer.name().c_str(), 3000), hixl::SUCCESS);
  EXPECT_EQ(TransportOf(plain, peer.name()), "shm");
  // Named, it is used, by any of its names (HIXL's programs say roce).
  for (const char *name : {"ucx", "rdma", "roce"}) {
    SCOPED_TRACE(name);
    hixl::Hixl e;
    ASSERT_EQ(e.Initialize("127.0.0.1", Config(std::string(R"({"comm_resource_config.protocol_desc": [")") + name +
                                               R"(:host"], "ucx.tls": "tcp", "ucx.net_devices": "lo"})")),
              hixl::SUCCESS);
    ASSERT_EQ(e.Connect(peer.name().c_str(), 3000), hixl::SUCCESS);
    EXPECT_EQ(TransportOf(e, peer.name()), "ucx");
    e.Finalize();
  }
  plain.Finalize();
  peer.Stop();
}

TEST(UcxSelect, UcxThatCannotReachTheTargetFallsBackToTheNextTransport) {
  // The target's UCX runs on tcp only, ours on shared memory only: UCX
  // finds no common transport at once, and the link goes on over tcp.
  PeerProcess peer;
  ASSERT_TRUE(peer.Start(false, kUcxTarget));
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", Config(R"({"comm_resource_config.protocol_desc": ["ucx:host", "tcp:host"],
                                                 "ucx.tls": "sm"})")),
            hixl::SUCCESS);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(e.Connect(peer.name().c_str(), 5000), hixl::SUCCESS);
  EXPECT_LT(SecondsSince(t0), 3.0 * kSlack);
  EXPECT_EQ(TransportOf(e, peer.name()), "tcp");
  e.Finalize();
  peer.Stop();
}

TEST(UcxSelect, AMissingPluginLeavesTheLinkOnTcp) {
  // An initiator whose protocol_desc names ucx first, in a process where the
  // plug-in cannot be loaded: Initialize warns and goes on; the link is tcp.
  PeerProcess target, initiator;
  ASSERT_TRUE(target.Start(false, kUcxTarget));
  initiator.env = {"HIXL_UCX_PLUGIN=/nonexistent/libhixl_ucx.so"};
  ASSERT_TRUE(initiator.Start(false, R"({"comm_resource_config.protocol_desc": ["ucx:host", "tcp:host"]})"));
  EXPECT_EQ(initiator.Command("CONNECT " + target.name() + " 3000"), "OK");
  EXPECT_EQ(initiator.Command("TRANSPORT " + target.name()), "OK tcp");
  initiator.Stop();
  target.Stop();
}

TEST(UcxSelect, ABadUcxSettingFailsInitialize) {
  hixl::Hixl e;
  EXPECT_EQ(e.Initialize("127.0.0.1", Config(R"({"comm_resource_config.protocol_desc": ["ucx:host"],
                                                 "ucx.no-such key": "1"})")),
            hixl::PARAM_INVALID);
}

// WRITE + notify, again and again: the target checks each WRITE's bytes the
// moment it takes the notify that follows it (the batch completes only
// after UCX's flush, i.e. once its data is in the target's memory).
class UcxNotifyOrder : public PeerTest {};

TEST_P(UcxNotifyOrder, EachNotifyFindsTheDataOfTheWriteBeforeIt) {
#ifdef __SANITIZE_THREAD__
  constexpr size_t kRounds = 2000;
#else
  constexpr size_t kRounds = 10000;
#endif
  constexpr size_t kSlot = 4096;  // each round its own slot: no later write can mend an early notify
  size_t id = 0;
  const uintptr_t raddr = peer_.AllocRegistered(kRounds * kSlot, &id);
  ASSERT_NE(raddr, 0u);
  LocalBuffer local(kRounds * kSlot);
  RegisterLocal(local);
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  ASSERT_TRUE(peer_.Send("NOTIFY_CHECK " + std::to_string(id) + " " + std::to_string(kSlot) + " " +
                         std::to_string(kRounds) + " 300000"));
  for (size_t i = 0; i < kRounds; ++i) {
    FillPattern(local.data() + i * kSlot, kSlot, i);
    ASSERT_EQ(Transfer(hixl::WRITE, {{local.addr() + i * kSlot, raddr + i * kSlot, kSlot}}, 5000), hixl::SUCCESS)
        << "round " << i;
    const std::string msg = std::to_string(i);
    hixl::NotifyDesc n{hixl::AscendString("n"), hixl::AscendString(msg.c_str())};
    ASSERT_EQ(engine_.SendNotify(remote_.c_str(), n, 5000), hixl::SUCCESS) << "round " << i;
  }
  EXPECT_EQ(peer_.ReadLine(300000), "OK " + std::to_string(kRounds) + " 0");
}

INSTANTIATE_TEST_SUITE_P(Ucx, UcxNotifyOrder, UcxNets(), NetName);

// Keys: each table entry's key is unpacked once per endpoint and cached; a
// region registered again (same range, a new key) gets its new key.
class UcxKeys : public PeerTest {};

TEST_P(UcxKeys, ARegionRegisteredAgainAtTheSameRangeIsReachedWithItsNewKey) {
  auto a = Words(peer_.Command("ALLOC " + std::to_string(1u << 20)));
  ASSERT_EQ(a.size(), 3u);
  const size_t id = std::stoul(a[1]);
  const uintptr_t raddr = std::stoull(a[2]);
  LocalBuffer local(1u << 20);
  RegisterLocal(local);
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto r = Words(peer_.Command("REG " + a[1]));
    ASSERT_EQ(r.size(), 2u);
    FillPattern(local.data(), local.size(), 90 + round);
    // Twice on one registration: the second batch uses the cached key.
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(Transfer(hixl::WRITE, {{local.addr() + 1, raddr + 7, local.size() - 8}}, 5000), hixl::SUCCESS);
      EXPECT_EQ(peer_.HashOf(id, 7, local.size() - 8), Hash(local.data() + 1, local.size() - 8));
    }
    ASSERT_EQ(peer_.Command("DEREG " + r[1]), "OK");
    EXPECT_EQ(Transfer(hixl::WRITE, {{local.addr(), raddr, 4096}}, 5000), hixl::PARAM_INVALID);
  }
}

INSTANTIATE_TEST_SUITE_P(Ucx, UcxKeys, UcxNets(), NetName);

// The target frozen or killed under a link over ucx.
class UcxFailure : public FailureTest {
 protected:
  void SetUp() override {
    // Heartbeats every second: UCX's keepalive (which finds a dead peer over
    // shared memory) follows them.
    StartAll(R"({"heartbeat.interval_ms": 1000})", ResourceConfig(R"({"heartbeat.interval_ms": 1000})"));
    remote_addr_ = peer_.AllocRegistered(kBig, &remote_id_);
    ASSERT_NE(remote_addr_, 0u);
    local_ = std::make_unique<LocalBuffer>(kBig);
    RegisterLocal(*local_);
    ASSERT_EQ(Connect(), hixl::SUCCESS);
  }
};

TEST_P(UcxFailure, AFrozenTargetTimesOutTheReadBufferStaysAsItWasAndTheLinkGoesOn) {
  FillPattern(local_->data(), kBig, 77);
  const uint64_t before = Hash(local_->data(), kBig);
  peer_.Kill(SIGSTOP);
  std::vector<hixl::TransferOpDesc> read{{local_->addr(), remote_addr_, 8u << 20}};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Transfer(hixl::READ, read, 500), hixl::TIMEOUT);
  const double took = SecondsSince(t0);
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 0.5 + 1.5 * kSlack);
  peer_.Kill(SIGCONT);
  // The cut READ never lands, not even once the target runs again.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Hash(local_->data(), kBig), before) << "the timed-out READ wrote the local buffer";
  // The link goes on, on a new endpoint.
  ASSERT_EQ(Transfer(hixl::WRITE, {{local_->addr(), remote_addr_, 1u << 20}}, 5000), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 1u << 20), Hash(local_->data(), 1u << 20));
  ASSERT_EQ(Transfer(hixl::READ, {{local_->addr() + (2u << 20), remote_addr_, 1u << 20}}, 5000), hixl::SUCCESS);
  EXPECT_EQ(Hash(local_->data() + (2u << 20), 1u << 20), Hash(local_->data(), 1u << 20));
  EXPECT_EQ(TransportOf(engine_, remote_), "ucx");
}

TEST_P(UcxFailure, AKilledTargetFailsTheCallInTimeAndANewTargetAtItsAddressWorks) {
  // FAILED long before the deadline: the control stream's end closes the
  // link (over sm UCX itself takes the unreaped target for alive, and
  // without that the call ended TIMEOUT at its deadline).
  double secs = 0;
  hixl::Status s = RunUntilFailure(hixl::WRITE, SIGKILL, 10000, &secs);
  EXPECT_EQ(s, hixl::FAILED);
  EXPECT_LT(secs, 1.0 + 1.0 * kSlack);
  peer_.Stop();
  PeerProcess again;
  ASSERT_TRUE(again.StartAt(remote_, PeerConfigFor(R"({"heartbeat.interval_ms": 1000})", GetParam())));
  engine_.Disconnect(remote_.c_str(), 1000);  // the broken link (or none, if a heartbeat closed it)
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  size_t id = 0;
  const uintptr_t raddr = again.AllocRegistered(4u << 20, &id);
  ASSERT_NE(raddr, 0u);
  FillPattern(local_->data(), 4u << 20, 78);
  ASSERT_EQ(Transfer(hixl::WRITE, {{local_->addr() + 3, raddr + 5, (4u << 20) - 8}}, 5000), hixl::SUCCESS);
  EXPECT_EQ(again.HashOf(id, 5, (4u << 20) - 8), Hash(local_->data() + 3, (4u << 20) - 8));
  again.Stop();
}

// A relayed transfer (local memory not registered: it goes through a staging
// buffer) to a frozen target times out like any other and never lands. The
// caller's cancel closed the endpoint under the channel's endpoint lock and
// waited for the plug-in's thread, which completed the cut round's batch and
// ran the relay's round callback there; that cancelled the round and waited
// for the same lock: the call never returned.
TEST_P(UcxFailure, ATimedOutRelayedReadReturnsInTimeAndNeverLands) {
  std::vector<uint8_t> dst(4u << 20, 0xee);
  peer_.Kill(SIGSTOP);
  const auto t0 = std::chrono::steady_clock::now();
  auto call = std::async(std::launch::async, [&] {
    return Transfer(hixl::READ, {{reinterpret_cast<uintptr_t>(dst.data()), remote_addr_, dst.size()}}, 300);
  });
  if (call.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "a relayed READ to a frozen target had not returned 10 s after it began (deadline 300 ms)";
    std::fflush(stdout);
    std::_Exit(1);  // the hung call's thread cannot be joined
  }
  EXPECT_EQ(call.get(), hixl::TIMEOUT);
  EXPECT_LT(SecondsSince(t0), 0.3 + 1.5 * kSlack);
  peer_.Kill(SIGCONT);
  // The cut READ never lands, not even once the target runs again.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (uint8_t b : dst) ASSERT_EQ(b, 0xee) << "the timed-out READ wrote the caller's memory";
  // The link goes on, relayed.
  std::vector<uint8_t> src(2u << 20);
  FillPattern(src.data(), src.size(), 79);
  ASSERT_EQ(Transfer(hixl::WRITE, {{reinterpret_cast<uintptr_t>(src.data()), remote_addr_, src.size()}}, 5000),
            hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, src.size()), Hash(src.data(), src.size()));
}

INSTANTIATE_TEST_SUITE_P(Ucx, UcxFailure, UcxNets(), NetName);

}  // namespace
}  // namespace hixl_test

#endif  // HIXL_TEST_UCX
