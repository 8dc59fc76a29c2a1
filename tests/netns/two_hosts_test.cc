// Two hosts with faults: a target in one network namespace, initiators in
// another, joined by a veth pair, so every link is a real remote one (tcp;
// the tests check it is not shm, which works across network namespaces of
// one kernel). Transfers are byte-checked; then the network breaks: a
// partition, a shaped link, an address that goes away. Needs root; skipped
// otherwise. docs/testing.md lists what each test shows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hixl/hixl.h"
#include "netns/two_hosts.h"
#include "support/pattern.h"
#include "support/peer_process.h"

namespace hixl_test {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kTimeout = std::to_string(hixl::TIMEOUT);
const std::string kFailed = std::to_string(hixl::FAILED);
// tcp only (shm would work between these namespaces: same kernel, same
// pids), and heartbeats that notice a dead peer within a second.
const char kConfig[] = R"({"comm_resource_config.protocol_desc": ["tcp:host"], "heartbeat.interval_ms": 500})";
constexpr int kPort = 16000;  // the namespaces are ours: no other engine listens there
constexpr size_t kLen = 16u << 20;

long long MsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

std::string ReadFile(const std::string &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

size_t Count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A peer process on one of the hosts, with a registered buffer of kLen bytes.
struct Host {
  PeerProcess peer;
  std::string log;  // its stderr, at log level info
  size_t id = 0;
  uintptr_t addr = 0;

  // "WRITE"/"READ" of len bytes at off of our buffer and the target's.
  std::string Transfer(const std::string &op, const Host &target, size_t off, size_t len, int ms) {
    return peer.Command(op + " " + target.peer.name() + " " + std::to_string(id) + " " + std::to_string(off) + " " +
                        std::to_string(target.addr + off) + " " + std::to_string(len) + " " + std::to_string(ms));
  }
  std::string Fill(uint64_t seed) { return peer.Command("FILL " + std::to_string(id) + " " + std::to_string(seed)); }
  uint64_t HashOf(size_t off, size_t len) { return peer.HashOf(id, off, len); }
  // STREAM: calls of the whole buffer in `block`-byte descriptors for `ms`.
  bool SendStream(const std::string &op, const Host &target, size_t block, int ms, int timeout) {
    return peer.Send("STREAM " + op + " " + target.peer.name() + " " + std::to_string(id) + " " +
                     std::to_string(target.addr) + " " + std::to_string(block) + " " + std::to_string(ms) + " " +
                     std::to_string(timeout));
  }
};

struct StreamResult {
  uint64_t bytes = 0;
  double seconds = 0;
  std::string status;  // of the call that failed, "0" if none did
  long long last_ms = 0;
};

bool ParseStream(const std::string &line, StreamResult *r) {
  auto w = Words(line);
  if (w.size() != 5 || w[0] != "OK") return false;
  r->bytes = std::stoull(w[1]);
  r->seconds = std::stoull(w[2]) / 1e6;
  r->status = w[3];
  r->last_ms = std::stoll(w[4]);
  return true;
}

class TwoHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) {
      GTEST_SKIP() << "needs root: these tests make two network namespaces joined by a veth pair";
    }
    std::string failed = net_.Create();
    if (!failed.empty()) GTEST_SKIP() << "cannot make network namespaces here ('" << failed << "' failed)";
  }
  void TearDown() override {
    for (auto &h : peers_) {
      h->peer.Stop(2000);  // before their namespaces go
      if (HasFailure()) std::fprintf(stderr, "--- %s:\n%s\n", h->log.c_str(), ReadFile(h->log).c_str());
      std::remove(h->log.c_str());
    }
    net_.Destroy();
  }

  // Starts a peer on side s, with a registered buffer: the target listens
  // on A's address; initiators are clients with AutoConnect.
  // nullptr if it did not start (TearDown shows its log).
  Host *Start(TwoHosts::Side s) {
    peers_.push_back(std::make_unique<Host>());
    Host *h = peers_.back().get();
    h->log = "/tmp/hixl_netns_" + std::to_string(getpid()) + "_" + std::to_string(peers_.size()) + ".log";
    h->peer.prefix = net_.Prefix(s);
    h->peer.env = {"HIXL_LOG_LEVEL=info"};
    h->peer.stderr_path = h->log;
    if (s == TwoHosts::kB) h->peer.options = {"AutoConnect=1"};
    std::string me = net_.ip(s) + (s == TwoHosts::kA ? ":" + std::to_string(kPort) : "");
    if (!h->peer.StartAt(me, kConfig)) return nullptr;
    h->addr = h->peer.AllocRegistered(kLen, &h->id);
    return h->addr == 0 ? nullptr : h;
  }

  // Writes `seed`'s pattern from `from` to `to` and checks the bytes.
  void WriteChecked(Host *from, Host *to, uint64_t seed, size_t off, size_t len, int ms = 3000) {
    ASSERT_EQ(from->Fill(seed), "OK");
    ASSERT_EQ(from->Transfer("WRITE", *to, off, len, ms), "OK");
    EXPECT_EQ(to->HashOf(off, len), from->HashOf(off, len)) << len << " bytes at " << off;
  }

  // Retries a checked WRITE until it goes through (the network came back),
  // for at most `ms`; returns how many calls failed first.
  int WriteUntilThrough(Host *from, Host *to, uint64_t seed, int ms) {
    EXPECT_EQ(from->Fill(seed), "OK");
    const auto t0 = Clock::now();
    int failed = 0;
    for (int i = 0; i < 100 && MsSince(t0) < ms; ++i) {
      auto c0 = Clock::now();
      std::string r = from->Transfer("WRITE", *to, 0, kLen, 1000);
      if (r == "OK") {
        EXPECT_EQ(to->HashOf(0, kLen), from->HashOf(0, kLen));
        return failed;
      }
      EXPECT_LE(MsSince(c0), 2000) << "a call with a 1000 ms timeout took longer than that plus a second";
      ++failed;
    }
    ADD_FAILURE() << "no WRITE went through within " << ms << " ms of the network coming back";
    return failed;
  }

  TwoHosts net_;
  std::vector<std::unique_ptr<Host>> peers_;
};

TEST_F(TwoHostsTest, TransfersAcrossHostsOverTcpAreByteExact) {
  Host *target = Start(TwoHosts::kA);
  Host *init = Start(TwoHosts::kB);
  ASSERT_TRUE(target && init);
  ASSERT_EQ(init->peer.Command("CONNECT " + target->peer.name() + " 3000"), "OK");
  EXPECT_EQ(Count(ReadFile(init->log), "uses tcp"), 1u) << ReadFile(init->log);
  EXPECT_EQ(Count(ReadFile(init->log), "uses shm"), 0u);

  uint64_t seed = 1;
  for (size_t len : {size_t{1}, size_t{4095}, size_t{65539}, kLen - 4096}) {
    WriteChecked(init, target, seed++, 4096 - (len & 4095), len);
    ASSERT_EQ(target->Fill(seed++), "OK");
    ASSERT_EQ(init->Transfer("READ", *target, 0, len, 3000), "OK");
    EXPECT_EQ(init->HashOf(0, len), target->HashOf(0, len)) << "READ of " << len;
  }
  // Many descriptors per call, call after call, both ways.
  for (std::string op : {"WRITE", "READ"}) {
    Host *src = op == "WRITE" ? init : target;
    ASSERT_EQ(src->Fill(seed++), "OK");
    StreamResult r;
    ASSERT_TRUE(init->SendStream(op, *target, 64 << 10, 300, 3000));
    ASSERT_TRUE(ParseStream(init->peer.ReadLine(10000), &r));
    EXPECT_EQ(r.status, "0") << op;
    EXPECT_GT(r.bytes, 0u) << op;
    EXPECT_EQ(target->HashOf(0, kLen), init->HashOf(0, kLen)) << op;
  }
}

TEST_F(TwoHostsTest, APartitionEndsCallsWithinTheirDeadlineAndAutoConnectRecoversAfterIt) {
  Host *target = Start(TwoHosts::kA);
  Host *init = Start(TwoHosts::kB);
  ASSERT_TRUE(target && init);
  ASSERT_EQ(init->Fill(7), "OK");
  const uint64_t sent = init->HashOf(0, kLen);
  // Calls of 16 MiB in 1 MiB descriptors, each with a 1 s timeout, for up
  // to 30 s: running once the first one's bytes are at the target.
  ASSERT_TRUE(init->SendStream("WRITE", *target, 1 << 20, 30000, 1000));
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000 && target->HashOf(0, kLen) != sent && MsSince(t0) < 10000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(target->HashOf(0, kLen), sent) << "no call went through before the partition";

  ASSERT_TRUE(net_.Partition());
  const auto cut = Clock::now();
  StreamResult r;
  ASSERT_TRUE(ParseStream(init->peer.ReadLine(5000), &r)) << "calls went on past the partition";
  EXPECT_TRUE(r.status == kTimeout || r.status == kFailed) << r.status;
  EXPECT_LE(r.last_ms, 2000) << "the call cut by the partition overran its 1000 ms timeout by more than 1 s";
  EXPECT_LE(MsSince(cut), 3000);
  EXPECT_GT(r.bytes, 0u);
  std::printf("partition: the call in flight ended %s after %lld ms (timeout 1000 ms)\n", r.status.c_str(),
              r.last_ms);

  // While the partition lasts (three heartbeat intervals and more: both
  // sides give the link up), calls and connects fail within their deadline.
  for (int i = 0; i < 2; ++i) {
    auto c0 = Clock::now();
    std::string w = init->Transfer("WRITE", *target, 0, 4096, 1000);
    EXPECT_TRUE(w == "ERR " + kTimeout || w == "ERR " + kFailed) << w;
    EXPECT_LE(MsSince(c0), 2000);
  }
  for (int i = 0; i < 100 && MsSince(cut) < 2500; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const size_t links_before = Count(ReadFile(init->log), "uses tcp");

  ASSERT_TRUE(net_.Heal());
  std::printf("healed: %d calls failed before one went through\n", WriteUntilThrough(init, target, 8, 10000));
  EXPECT_GT(Count(ReadFile(init->log), "uses tcp"), links_before) << "the link was not made anew";
}

TEST_F(TwoHostsTest, AShapedLinkIsSharedFairlyAtItsRate) {
  // Not 10 Gbit/s: unshaped, this 2-core VM moves 9-10 Gbit/s between the
  // namespaces (hixl_bench WRITE, 1 MiB blocks), so shaped to 10 Gbit/s the
  // CPU limits (7.4 Gbit/s); shaped to 5 and 2 Gbit/s hixl moves 96 % of the
  // rate. 1 Gbit/s keeps the link the limit under ASan and beside other jobs.
  constexpr double kRateBits = 1e9;
  ASSERT_TRUE(net_.Shape("1gbit"));
  Host *target = Start(TwoHosts::kA);
  Host *a = Start(TwoHosts::kB);
  Host *b = Start(TwoHosts::kB);
  ASSERT_TRUE(target && a && b);
  for (Host *h : {a, b}) ASSERT_EQ(h->peer.Command("CONNECT " + target->peer.name() + " 3000"), "OK");
  // Both initiators write the whole 16 MiB in 1 MiB descriptors, call after
  // call, for 3 s at once (to the same target bytes: only the rate counts).
  // The shaped rate is a ceiling: other work on the machine (ctest -j2, a
  // build) can only hold the writers below it (84 % once at a load average
  // of 15). So up to three windows are measured: none may exceed the rate,
  // and one must reach 90 % of it, shared fairly.
  bool reached = false;
  for (int window = 0; window < 3 && !reached; ++window) {
    ASSERT_TRUE(a->SendStream("WRITE", *target, 1 << 20, 3000, 10000));
    ASSERT_TRUE(b->SendStream("WRITE", *target, 1 << 20, 3000, 10000));
    StreamResult ra, rb;
    ASSERT_TRUE(ParseStream(a->peer.ReadLine(20000), &ra));
    ASSERT_TRUE(ParseStream(b->peer.ReadLine(20000), &rb));
    EXPECT_EQ(ra.status, "0");
    EXPECT_EQ(rb.status, "0");
    const double rate_a = ra.bytes * 8 / ra.seconds, rate_b = rb.bytes * 8 / rb.seconds;
    const double total = rate_a + rate_b;
    std::printf("window %d, shaped to %.2f Gbit/s: %.3f + %.3f = %.3f Gbit/s (%.1f %%)\n", window, kRateBits / 1e9,
                rate_a / 1e9, rate_b / 1e9, total / 1e9, 100 * total / kRateBits);
    EXPECT_LE(total, 1.02 * kRateBits) << "more than the shaped rate: the link was not what limited";
    if (total < 0.9 * kRateBits) continue;
    reached = true;
    EXPECT_GE(std::min(rate_a, rate_b), 0.8 * std::max(rate_a, rate_b)) << "one link took more than its share";
  }
  EXPECT_TRUE(reached) << "no window reached 90 % of the shaped rate";
}

class AddressGoneTest : public TwoHostsTest, public ::testing::WithParamInterface<TwoHosts::Side> {};

TEST_P(AddressGoneTest, CallsEndWithinTheirDeadlineAndRecoverWhenItReturns) {
  Host *target = Start(TwoHosts::kA);
  Host *init = Start(TwoHosts::kB);
  ASSERT_TRUE(target && init);
  WriteChecked(init, target, 3, 0, kLen);

  ASSERT_TRUE(net_.DropAddress(GetParam()));
  // The link is there but leads nowhere, then (heartbeats) it is given up
  // and AutoConnect tries anew: every call ends within its deadline.
  const auto gone = Clock::now();
  int failed = 0;
  for (int i = 0; i < 50 && MsSince(gone) < 2500; ++i) {
    auto c0 = Clock::now();
    std::string w = init->Transfer("WRITE", *target, 0, 1 << 20, 1000);
    EXPECT_TRUE(w == "ERR " + kTimeout || w == "ERR " + kFailed) << w;
    EXPECT_LE(MsSince(c0), 2000);
    ++failed;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(failed, 2);

  ASSERT_TRUE(net_.RestoreAddress(GetParam()));
  std::printf("address back: %d calls failed before one went through\n", WriteUntilThrough(init, target, 4, 10000));
}

INSTANTIATE_TEST_SUITE_P(Side, AddressGoneTest, ::testing::Values(TwoHosts::kA, TwoHosts::kB),
                         [](const ::testing::TestParamInfo<TwoHosts::Side> &i) {
                           return std::string(i.param == TwoHosts::kA ? "Target" : "Initiator");
                         });

}  // namespace
}  // namespace hixl_test
