// failure_test.cc: dead, frozen, silent and hostile peers. Nothing hangs,
// nothing touches a caller's buffers after the call returned, and a bad peer
// only ever closes its own link.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "common/log.h"
#include "engine/host_identity.h"
#include "integration/fixture.h"
#include "integration/net_util.h"
#include "support/region_entries.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/listener.h"
#include "transport/tcp/target_stream.h"
#include "transport/tcp/tcp_transport.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl_test {
namespace {

constexpr size_t kBig = 64u << 20;

class FailureTest : public PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    remote_addr_ = peer_.AllocRegistered(kBig, &remote_id_);
    ASSERT_NE(remote_addr_, 0u);
    local_ = std::make_unique<LocalBuffer>(kBig);
    RegisterLocal(*local_);
    ASSERT_EQ(Connect(), hixl::SUCCESS);
  }

  std::vector<hixl::TransferOpDesc> BigBatch() const {
    std::vector<hixl::TransferOpDesc> d;
    for (size_t off = 0; off < kBig; off += 1u << 20) d.push_back({local_->addr() + off, remote_addr_ + off, 1u << 20});
    return d;
  }

  // Runs batches until one fails; kills the peer with `sig` meanwhile.
  // Returns the failing status and how long that call took.
  hixl::Status RunUntilFailure(hixl::TransferOp op, int sig, int timeout_ms, double *call_seconds) {
    std::atomic<bool> started{false};
    hixl::Status result = hixl::SUCCESS;
    std::thread worker([&] {
      auto batch = BigBatch();
      for (int i = 0; i < 1000 && result == hixl::SUCCESS; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        started = true;
        result = Transfer(op, batch, timeout_ms);
        *call_seconds = SecondsSince(t0);
      }
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    peer_.Kill(sig);
    worker.join();
    return result;
  }

  // The local buffer does not change any more: the engine let go of it.
  void ExpectLocalBufferQuiet() {
    uint64_t h1 = Hash(local_->data(), kBig);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(Hash(local_->data(), kBig), h1);
  }

  std::unique_ptr<LocalBuffer> local_;
  uintptr_t remote_addr_ = 0;
  size_t remote_id_ = 0;
};

TEST_P(FailureTest, PeerKilledMidWriteFailsFast) {
  double secs = 0;
  hixl::Status s = RunUntilFailure(hixl::WRITE, SIGKILL, 3000, &secs);
  EXPECT_TRUE(s == hixl::FAILED || s == hixl::TIMEOUT) << s;
  EXPECT_LT(secs, 3.0 + 1.0);
  // The link is gone: further calls fail at once instead of hanging.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(Transfer(hixl::WRITE, BigBatch(), 3000), hixl::SUCCESS);
  EXPECT_LT(SecondsSince(t0), 1.0);
}

TEST_P(FailureTest, PeerKilledMidReadFailsFastAndLetsGoOfTheBuffer) {
  double secs = 0;
  hixl::Status s = RunUntilFailure(hixl::READ, SIGKILL, 3000, &secs);
  EXPECT_TRUE(s == hixl::FAILED || s == hixl::TIMEOUT) << s;
  EXPECT_LT(secs, 3.0 + 1.0);
  ExpectLocalBufferQuiet();
}

// Tests that freeze the peer: over shm a frozen peer still gets its data
// (the copies need no CPU of the peer), so these are about TCP.
class FailureTcpTest : public FailureTest {};

TEST_P(FailureTcpTest, FrozenPeerTimesOutWithinTheCallTimeout) {
  double secs = 0;
  hixl::Status s = RunUntilFailure(hixl::READ, SIGSTOP, 500, &secs);
  EXPECT_EQ(s, hixl::TIMEOUT);
  EXPECT_GE(secs, 0.45);
  EXPECT_LT(secs, 0.5 + 1.0);
  ExpectLocalBufferQuiet();
  peer_.Kill(SIGCONT);
}

TEST_P(FailureTcpTest, DeregisterMemWaitsForTheTransferUsingTheRegion) {
  // Register a second local region, start a READ into it that cannot finish
  // (the peer is frozen), and deregister the region meanwhile.
  LocalBuffer other(1u << 20);
  hixl::MemHandle h = RegisterLocal(other);
  peer_.Kill(SIGSTOP);
  std::atomic<bool> calling{false};
  hixl::Status s = hixl::SUCCESS;
  std::thread reader([&] {
    calling = true;
    s = Transfer(hixl::READ, {{other.addr(), remote_addr_, other.size()}}, 1500);
  });
  while (!calling) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the READ is on the wire by now
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(engine_.DeregisterMem(h), hixl::SUCCESS);
  double waited = SecondsSince(t0);
  reader.join();
  peer_.Kill(SIGCONT);
  EXPECT_EQ(s, hixl::TIMEOUT);
  EXPECT_GE(waited, 0.8) << "DeregisterMem returned while the READ could still land";
  EXPECT_LT(waited, 2.5);
}

TEST_P(FailureTest, FinalizeWithTransfersInFlightReturnsPromptly) {
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto batch = BigBatch();
      for (int i = 0; i < 50; ++i) {
        if (Transfer(i % 2 ? hixl::READ : hixl::WRITE, batch, 10000) != hixl::SUCCESS) break;
      }
      ++done;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto t0 = std::chrono::steady_clock::now();
  engine_.Finalize();
  EXPECT_LT(SecondsSince(t0), 2.0);
  for (auto &th : threads) th.join();
  EXPECT_LT(SecondsSince(t0), 3.0);
  EXPECT_EQ(done.load(), 4);
  ExpectLocalBufferQuiet();
}

// Byte sequences a hostile or broken client might send.
std::vector<std::vector<uint8_t>> HostileInputs(const std::string &target) {
  using namespace hixl::wire;
  std::vector<std::vector<uint8_t>> out;
  std::mt19937 rng(5);
  for (int i = 0; i < 20; ++i) {
    std::vector<uint8_t> junk(1 + rng() % 4096);
    for (auto &b : junk) b = static_cast<uint8_t>(rng());
    out.push_back(junk);
  }
  FrameHeader h;
  h.type = MsgType::kHello;
  auto bad_version = Frame(h, {});
  bad_version[4] = 9;
  out.push_back(bad_version);
  h.body_len = kMaxBody + 1;
  std::vector<uint8_t> huge(kHeaderSize);
  EncodeHeader(h, huge.data());
  out.push_back(huge);
  out.push_back(Frame(h, {1, 2, 3}));  // HELLO with a garbage body
  Hello hello;
  hello.initiator = "evil";
  hello.target = target;
  std::vector<uint8_t> body;
  EncodeHello(hello, &body);
  h = FrameHeader();
  h.type = MsgType::kHello;
  auto good_hello = Frame(h, body);
  // A good handshake, then WRITEs that lie about their payload or aim at
  // unregistered memory, then a READ of a wild address.
  std::vector<uint8_t> seq = good_hello;
  Segment seg{0x1000, 64};
  std::vector<uint8_t> segs;
  EncodeSegments(&seg, 1, &segs);
  FrameHeader w;
  w.type = MsgType::kWriteReq;
  w.payload_len = 64;
  auto wf = Frame(w, segs);
  seq.insert(seq.end(), wf.begin(), wf.end());
  seq.insert(seq.end(), 64, 0xee);
  w.payload_len = 65;  // disagrees with the segment list
  wf = Frame(w, segs);
  seq.insert(seq.end(), wf.begin(), wf.end());
  out.push_back(seq);
  seq = good_hello;
  FrameHeader r;
  r.type = MsgType::kReadReq;
  auto rf = Frame(r, segs);
  seq.insert(seq.end(), rf.begin(), rf.end());
  FrameHeader ack;
  ack.type = MsgType::kWriteAck;  // a reply type sent as a request
  auto af = Frame(ack, {});
  seq.insert(seq.end(), af.begin(), af.end());
  out.push_back(seq);
  out.push_back(std::vector<uint8_t>(good_hello.begin(), good_hello.begin() + 10));  // half a header
  return out;
}

TEST_P(FailureTest, GarbageOnTheListeningPortLeavesGoodClientsWorking) {
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::thread attacker([&] {
    auto inputs = HostileInputs(remote_);
    for (int round = 0; round < 3 && !stop; ++round) {
      for (const auto &bytes : inputs) {
        int fd = RawConnect(remote_);
        if (fd < 0) continue;
        ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        (void)n;
        ++sent;
        // Read whatever comes back briefly, then hang up.
        timeval tv{0, 20000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        char buf[256];
        n = recv(fd, buf, sizeof(buf), 0);
        close(fd);
      }
    }
  });
  std::mt19937_64 rng(9);
  int good = 0;
  for (int i = 0; i < 60; ++i) {
    size_t len = 1 + rng() % (1u << 20);
    size_t off = rng() % (kBig - len);
    FillPattern(local_->data() + off, len, i);
    std::vector<hixl::TransferOpDesc> w{{local_->addr() + off, remote_addr_ + off, len}};
    // EXPECT and break, not ASSERT: the attacker thread must be joined.
    hixl::Status s = Transfer(hixl::WRITE, w, 5000);
    EXPECT_EQ(s, hixl::SUCCESS) << "round " << i;
    uint64_t remote_hash = peer_.HashOf(remote_id_, off, len);
    EXPECT_EQ(remote_hash, Hash(local_->data() + off, len)) << "round " << i;
    if (s != hixl::SUCCESS || remote_hash != Hash(local_->data() + off, len)) break;
    ++good;
  }
  stop = true;
  attacker.join();
  EXPECT_GT(sent.load(), 20);
  EXPECT_EQ(good, 60);
  // The peer still accepts new, well-behaved links.
  hixl::Hixl other;
  ASSERT_EQ(other.Initialize(GetParam().v6 ? "[::1]" : "127.0.0.1", {}), hixl::SUCCESS);
  EXPECT_EQ(other.Connect(remote_.c_str(), 3000), hixl::SUCCESS);
  other.Finalize();
}

TEST_P(FailureTcpTest, AWriteThatTimesOutMidFrameLeavesTheLinkWorking) {
  // 32 MiB cannot go in 1-3 ms: the calls time out with a frame half sent.
  // The stream must go on (no AutoConnect here: had it been closed, the
  // small calls after it would fail), and the small calls' data must land.
  const size_t kCut = 32u << 20, kSmall = 4096, kSmallBase = 40u << 20;
  std::vector<hixl::TransferOpDesc> big{{local_->addr(), remote_addr_, kCut}};
  int timeouts = 0;
  for (int i = 0; i < 20; ++i) {
    hixl::Status s = Transfer(hixl::WRITE, big, 1 + i % 3);
    EXPECT_TRUE(s == hixl::TIMEOUT || s == hixl::SUCCESS) << "round " << i << ": " << s;
    timeouts += s == hixl::TIMEOUT;
    const size_t off = kSmallBase + static_cast<size_t>(i) * kSmall;
    FillPattern(local_->data() + off, kSmall, static_cast<uint64_t>(i));
    std::vector<hixl::TransferOpDesc> w{{local_->addr() + off, remote_addr_ + off, kSmall}};
    ASSERT_EQ(Transfer(hixl::WRITE, w, 3000), hixl::SUCCESS) << "round " << i;
    EXPECT_EQ(peer_.HashOf(remote_id_, off, kSmall), Hash(local_->data() + off, kSmall)) << "round " << i;
  }
  EXPECT_GT(timeouts, 0);
  ExpectLocalBufferQuiet();
}

TEST_P(FailureTcpTest, ASecondDeregisterMemOfOneHandleWaitsForTheFirst) {
  // A transfer to a frozen peer holds the local region until it times out
  // (about 0.6 s); two threads deregister the region meanwhile. Neither may
  // return before the transfer has let go: the second call must not take
  // "already gone from the registry" for "done".
  hixl::MemHandle h = RegisterLocal(*local_);  // the range SetUp registered: its handle
  peer_.Kill(SIGSTOP);
  std::thread transfer([&] { Transfer(hixl::WRITE, BigBatch(), 600); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto t0 = std::chrono::steady_clock::now();
  double first = 0;
  std::thread other([&] {
    EXPECT_EQ(engine_.DeregisterMem(h), hixl::SUCCESS);
    first = SecondsSince(t0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(engine_.DeregisterMem(h), hixl::SUCCESS);
  const double second = SecondsSince(t0);
  other.join();
  transfer.join();
  peer_.Kill(SIGCONT);
  EXPECT_GT(first, 0.3);
  EXPECT_GT(second, 0.3) << "the second DeregisterMem returned while the region was still in use";
}

// A raw stream that has completed its handshake with `target`, or -1.
// `claim_pid`: the process on this host we claim to be, offering direct
// copies (0: nobody in particular); `ack_out`: the target's answer.
int RawHandshake(const std::string &target, uint64_t nonce, uint32_t heartbeat_ms = 0, uint32_t claim_pid = 0,
                 hixl::wire::HelloAck *ack_out = nullptr, const char *source = nullptr) {
  int fd = RawConnect(target, source);
  if (fd < 0) return -1;
  hixl::wire::Hello hello;
  hello.initiator = "raw";
  hello.target = target;
  hello.link_nonce = nonce;
  hello.heartbeat_ms = heartbeat_ms;
  if (claim_pid != 0) {
    hello.host = hixl::LocalHostIdentity();
    hixl::wire::Section offer;
    offer.id = hixl::shm::kWireId;
    hixl::shm::EncodePid(claim_pid, &offer.bytes);
    hello.offers.push_back(offer);
  }
  std::vector<uint8_t> body;
  hixl::wire::EncodeHello(hello, &body);
  hixl::wire::FrameHeader h;
  h.type = hixl::wire::MsgType::kHello;
  auto f = Frame(h, body);
  uint8_t hdr[hixl::wire::kHeaderSize];
  hixl::wire::FrameHeader ack;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::vector<uint8_t> ack_body;
  bool ok = send(fd, f.data(), f.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(f.size()) &&
            RecvExactly(fd, hdr, sizeof(hdr), deadline) &&
            hixl::wire::DecodeHeader(hdr, &ack) == hixl::wire::HeaderError::kOk &&
            (ack_body.resize(ack.body_len), RecvExactly(fd, ack_body.data(), ack_body.size(), deadline)) &&
            ack.status == hixl::SUCCESS;
  if (ok && ack_out != nullptr) ok = hixl::wire::DecodeHelloAck(ack_body.data(), ack_body.size(), ack_out);
  if (!ok) {
    close(fd);
    return -1;
  }
  return fd;
}

std::vector<uint8_t> ReadRequest(uint64_t id, const std::vector<hixl::wire::Segment> &segs) {
  std::vector<uint8_t> body;
  hixl::wire::EncodeSegments(segs.data(), segs.size(), &body);
  hixl::wire::FrameHeader h;
  h.type = hixl::wire::MsgType::kReadReq;
  h.req_id = id;
  return Frame(h, body);
}

TEST_P(FailureTcpTest, SilentConnectionsBeyondTheCapDropTheOldest) {
  // Connections that never say HELLO: past the cap the target drops the
  // oldest of them at once (not after the 10 s handshake timeout), and
  // handshakes go on working.
  constexpr size_t kExtra = 40;
  const size_t cap = hixl::tcp::Listener::kMaxPendingHandshakes;
  std::vector<int> fds;
  for (size_t i = 0; i < cap + kExtra; ++i) {
    int fd = RawConnect(remote_);
    ASSERT_GE(fd, 0) << "connect " << i;
    fds.push_back(fd);
  }
  const auto t0 = std::chrono::steady_clock::now();
  size_t dropped = 0;
  for (size_t i = 0; i < kExtra; ++i) dropped += EndedWithin(fds[i], 3000);
  EXPECT_EQ(dropped, kExtra);
  EXPECT_LT(SecondsSince(t0), 5.0);
  size_t newest_dropped = 0;
  for (size_t i = fds.size() - kExtra; i < fds.size(); ++i) newest_dropped += EndedWithin(fds[i], 0);
  EXPECT_EQ(newest_dropped, 0u) << "the newest silent connections should wait for their handshake timeout";
  // A fresh engine still gets through its handshake, and moves bytes.
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize(GetParam().v6 ? "[::1]" : "127.0.0.1", {}), hixl::SUCCESS);
  EXPECT_EQ(e.Connect(remote_.c_str(), 3000), hixl::SUCCESS);
  e.Finalize();
  for (int fd : fds) close(fd);
  FillPattern(local_->data(), 4096, 5);
  std::vector<hixl::TransferOpDesc> w{{local_->addr(), remote_addr_, 4096}};
  EXPECT_EQ(Transfer(hixl::WRITE, w, 5000), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 4096), Hash(local_->data(), 4096));
}

TEST_P(FailureTcpTest, AFloodFromOneAddressDropsItsOwnConnections) {
  // Past the cap, the connections dropped are those of the address with the
  // most waiting: one silent connection from 127.0.0.3, older than all of a
  // flood from 127.0.0.2, survives it.
  if (GetParam().v6) GTEST_SKIP() << "uses several IPv4 loopback addresses";
  auto connect_from = [this](const char *source) { return RawConnect(remote_, source); };
  const int lone = connect_from("127.0.0.3");
  ASSERT_GE(lone, 0);
  std::vector<int> flood;
  const size_t cap = hixl::tcp::Listener::kMaxPendingHandshakes;
  for (size_t i = 0; i < cap + 40; ++i) {
    int fd = connect_from("127.0.0.2");
    ASSERT_GE(fd, 0) << "connect " << i;
    flood.push_back(fd);
  }
  size_t dropped = 0;
  for (size_t i = 0; i < 40; ++i) dropped += EndedWithin(flood[i], 3000);
  EXPECT_EQ(dropped, 40u) << "the oldest of the flood should have been dropped";
  EXPECT_FALSE(EndedWithin(lone, 200)) << "the lone connection of another address was dropped for the flood";
  close(lone);
  for (int fd : flood) close(fd);
}

TEST_P(FailureTcpTest, TargetServesRequestsThatWaitedBehindAFullReplyQueue) {
  // 64 READs fill the target's reply queue while the peer reads nothing;
  // ten more arrive meanwhile and sit read but unserved. Once the replies
  // drain, those ten must be served although no new byte arrives.
  int fd = RawHandshake(remote_, 77);
  ASSERT_GE(fd, 0);
  constexpr int kFirst = 64, kSecond = 10;
  constexpr size_t kLen = 1u << 20;
  std::vector<uint8_t> first, second;
  for (int i = 0; i < kFirst + kSecond; ++i) {
    auto f = ReadRequest(static_cast<uint64_t>(i + 1), {{remote_addr_, kLen}});
    (i < kFirst ? first : second).insert((i < kFirst ? first : second).end(), f.begin(), f.end());
  }
  ASSERT_TRUE(SendAll(fd, first));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(SendAll(fd, second));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<uint8_t> payload(kLen);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int got = 0;
  for (; got < kFirst + kSecond; ++got) {
    uint8_t hdr[hixl::wire::kHeaderSize];
    hixl::wire::FrameHeader r;
    if (!RecvExactly(fd, hdr, sizeof(hdr), deadline) ||
        hixl::wire::DecodeHeader(hdr, &r) != hixl::wire::HeaderError::kOk) {
      break;
    }
    EXPECT_EQ(r.req_id, static_cast<uint64_t>(got + 1));
    EXPECT_EQ(r.status, hixl::SUCCESS);
    ASSERT_EQ(r.payload_len, kLen);
    if (!RecvExactly(fd, payload.data(), kLen, deadline)) break;
  }
  close(fd);
  EXPECT_EQ(got, kFirst + kSecond);
}

TEST_P(FailureTcpTest, ATargetSendingALongReadIsNotCutForMissingPings) {
  // An initiator that receives READ replies sends nothing meanwhile (it
  // pings only idle streams). Reading them slowly, as over a slow network,
  // takes many heartbeat intervals: the target must count the replies it
  // gets rid of as a sign of life, not close the stream after 3 intervals.
  int fd = RawHandshake(remote_, 79, /*heartbeat_ms=*/100);
  ASSERT_GE(fd, 0);
  constexpr int kReads = 4;
  constexpr size_t kLen = 4u << 20;
  std::vector<uint8_t> all;
  for (int i = 0; i < kReads; ++i) {
    auto f = ReadRequest(static_cast<uint64_t>(i + 1), {{remote_addr_ + i * kLen, kLen}});
    all.insert(all.end(), f.begin(), f.end());
  }
  ASSERT_TRUE(SendAll(fd, all));
  const size_t want = kReads * (hixl::wire::kHeaderSize + kLen);
  std::vector<uint8_t> chunk(64u << 10);
  size_t got = 0;
  auto t0 = std::chrono::steady_clock::now();
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  while (got < want && SecondsSince(t0) < 20) {  // about 12 MB/s: 1.4 s, 14 intervals
    ssize_t n = recv(fd, chunk.data(), std::min(chunk.size(), want - got), 0);
    if (n <= 0) break;  // closed by the target, or nothing for 2 s
    got += static_cast<size_t>(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(fd);
  EXPECT_EQ(got, want) << "the target stopped after " << SecondsSince(t0) << " s";
}

// A field of /proc/<pid>/status in MiB ("VmRSS:", or "VmHWM:" for the peak).
long StatusMiB(pid_t pid, const char *field = "VmRSS:") {
  std::FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, field, n) == 0) kib = std::atol(line + n);
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib / 1024;
}

long PeerRssMiB(pid_t pid) { return StatusMiB(pid); }

TEST_P(FailureTcpTest, SmallSegmentReadsDoNotMultiplyTheTargetsMemory) {
  // Each READ names the same KiB 65536 times: 1 MiB of request for 64 MiB of
  // reply. A peer that never reads the replies must not make the target
  // hold one 64 MiB copy per request.
  int fd = RawHandshake(remote_, 78);
  ASSERT_GE(fd, 0);
  const long before = PeerRssMiB(peer_.pid());
  ASSERT_GT(before, 0);
  std::vector<hixl::wire::Segment> segs(hixl::wire::kMaxSegmentsPerFrame, hixl::wire::Segment{remote_addr_, 1024});
  std::vector<uint8_t> all;
  for (int i = 0; i < 16; ++i) {
    auto f = ReadRequest(static_cast<uint64_t>(i + 1), segs);
    all.insert(all.end(), f.begin(), f.end());
  }
  // The target may stop reading (that is the point): do not wait for it.
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  SendAll(fd, all);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const long after = PeerRssMiB(peer_.pid());
  close(fd);
  // 16 requests of 64 MiB each would be 1 GiB; what is allowed is a few
  // replies' worth of queued iovec lists and copies.
  EXPECT_LT(after - before, 200) << "peer RSS went from " << before << " to " << after << " MiB";
  // And the engine still serves well-behaved callers.
  FillPattern(local_->data(), 4096, 3);
  std::vector<hixl::TransferOpDesc> w{{local_->addr(), remote_addr_, 4096}};
  EXPECT_EQ(Transfer(hixl::WRITE, w, 5000), hixl::SUCCESS);
}

// Reads one reply frame (its body and payload dropped); false if none came
// by `deadline`.
bool ReadReply(int fd, hixl::wire::FrameHeader *r, std::chrono::steady_clock::time_point deadline) {
  uint8_t hdr[hixl::wire::kHeaderSize];
  if (!RecvExactly(fd, hdr, sizeof(hdr), deadline) ||
      hixl::wire::DecodeHeader(hdr, r) != hixl::wire::HeaderError::kOk) {
    return false;
  }
  std::vector<uint8_t> sink(64u << 10);
  for (uint64_t left = r->body_len + r->payload_len; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, sink.size()));
    if (!RecvExactly(fd, sink.data(), n, deadline)) return false;
    left -= n;
  }
  return true;
}

TEST_P(FailureTcpTest, IdleStreamsGiveBackWhatABurstOfSmallSegmentsNeeded) {
  // Each stream sends one burst of requests whose small segments the target
  // copies through staging buffers (READs and a WRITE of 4096 x 1 KiB, a
  // READ of 65536 x 16 B: some 20 MiB of buffers and lists), takes every
  // reply, and then sits idle. The target must not keep those buffers per
  // idle stream: a server holds hundreds of streams.
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "measures RSS: ASan's allocator keeps freed memory (quarantine) instead of returning it";
#endif
  constexpr int kStreams = 8;
  const long before = PeerRssMiB(peer_.pid());
  ASSERT_GT(before, 0);
  std::vector<hixl::wire::Segment> kib(4096), tiny(hixl::wire::kMaxSegmentsPerFrame);
  for (size_t i = 0; i < kib.size(); ++i) kib[i] = {remote_addr_ + i * 2048, 1024};  // not adjacent: not merged
  for (size_t i = 0; i < tiny.size(); ++i) tiny[i] = {remote_addr_ + i * 32, 16};
  std::vector<uint8_t> reads, write;
  for (uint64_t id = 1; id <= 4; ++id) {
    auto f = ReadRequest(id, kib);
    reads.insert(reads.end(), f.begin(), f.end());
  }
  auto f = ReadRequest(5, tiny);
  reads.insert(reads.end(), f.begin(), f.end());
  {
    std::vector<uint8_t> body;
    hixl::wire::EncodeSegments(kib.data(), kib.size(), &body);
    hixl::wire::FrameHeader h;
    h.type = hixl::wire::MsgType::kWriteReq;
    h.req_id = 6;
    h.payload_len = kib.size() * 1024;
    write = Frame(h, body);
    write.resize(write.size() + h.payload_len, 0x3c);
  }
  std::vector<int> fds;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < kStreams; ++i) {
    int fd = RawHandshake(remote_, 900 + static_cast<uint64_t>(i));
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    // The READs are read (and their replies queued, each with its copy)
    // before we take any reply.
    ASSERT_TRUE(SendAll(fd, reads));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    hixl::wire::FrameHeader r;
    int answered = 0;
    for (; answered < 5 && ReadReply(fd, &r, deadline); ++answered) EXPECT_EQ(r.status, hixl::SUCCESS);
    ASSERT_TRUE(SendAll(fd, write));
    if (ReadReply(fd, &r, deadline)) {
      EXPECT_EQ(r.status, hixl::SUCCESS);
      ++answered;
    }
    ASSERT_EQ(answered, 6) << "stream " << i;
  }
  const long busy = PeerRssMiB(peer_.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // idle for more than kIdleTrim
  const long idle = PeerRssMiB(peer_.pid());
  for (int fd : fds) {
    EXPECT_FALSE(EndedWithin(fd, 0)) << "an idle stream was closed";
    close(fd);
  }
  EXPECT_LT(idle - before, 64) << "peer RSS: " << before << " MiB before, " << busy << " after the bursts, " << idle
                               << " with the " << kStreams << " streams idle";
}

TEST_P(FailureTcpTest, APeerHoldingEveryFdDoesNotLockOthersOut) {
  // The target may open 256 fds. A peer from 127.0.0.2 completes handshakes
  // until it holds more streams than that, each left with half a frame
  // header. Out of fds, the target closes quiet streams of the address
  // holding the most: the flood goes on, an engine on 127.0.0.1 connects and
  // moves bytes, an idle link of another address is left alone, and a
  // stream of the flooding address that is in use is never closed.
  if (GetParam().v6) GTEST_SKIP() << "uses a second IPv4 loopback address";
  peer_.Stop();
  peer_.env = {"HIXL_TEST_PEER_NOFILE=256"};
  ASSERT_TRUE(peer_.Start(false));
  remote_ = peer_.name();
  size_t id = 0;
  const uintptr_t remote = peer_.AllocRegistered(1u << 20, &id);
  ASSERT_NE(remote, 0u);
  ASSERT_EQ(Connect(), hixl::SUCCESS);  // an idle link from 127.0.0.1, made before the flood
  std::vector<hixl::TransferOpDesc> w{{local_->addr(), remote, 4096}};
  ASSERT_EQ(Transfer(hixl::WRITE, w, 5000), hixl::SUCCESS);

  // In use throughout: one small READ every 20 ms from the flooding address.
  const int busy = RawHandshake(remote_, 4999, 0, 0, nullptr, "127.0.0.2");
  ASSERT_GE(busy, 0);
  std::atomic<bool> stop{false};
  int answered = 0, failed = 0;
  std::thread pinger([&] {
    for (uint64_t i = 1; i <= 1000 && !stop; ++i) {
      hixl::wire::FrameHeader r;
      if (!SendAll(busy, ReadRequest(i, {{remote, 8}})) ||
          !ReadReply(busy, &r, std::chrono::steady_clock::now() + std::chrono::seconds(5))) {
        ++failed;
        return;
      }
      ++answered;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<int> flood;
  const uint8_t half_header = 0x48;
  for (int i = 0; i < 300; ++i) {
    int fd = RawHandshake(remote_, 5000 + static_cast<uint64_t>(i), 0, 0, nullptr, "127.0.0.2");
    if (fd < 0) break;
    flood.push_back(fd);
    send(fd, &half_header, 1, MSG_NOSIGNAL);
  }
  stop = true;
  pinger.join();
  EXPECT_EQ(flood.size(), 300u) << "handshakes beyond the fd limit should make room, not fail";
  size_t closed = 0;
  for (int fd : flood) closed += EndedWithin(fd, 0);
  EXPECT_GT(closed, 0u) << "300 streams cannot all be open in 256 fds";
  EXPECT_FALSE(EndedWithin(flood.back(), 0)) << "the newest stream was closed";
  EXPECT_EQ(failed, 0) << "a stream in use was closed (after " << answered << " replies)";
  EXPECT_GT(answered, 10);
  // The idle link of 127.0.0.1 was left alone, and a new engine gets in.
  FillPattern(local_->data(), 4096, 9);
  EXPECT_EQ(Transfer(hixl::WRITE, w, 5000), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(id, 0, 4096), Hash(local_->data(), 4096));
  hixl::Hixl fresh;
  ASSERT_EQ(fresh.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  EXPECT_EQ(fresh.Connect(remote_.c_str(), 3000), hixl::SUCCESS);
  fresh.Finalize();
  close(busy);
  for (int fd : flood) close(fd);
}

// This process serves a 64 MiB region; a raw peer READs all of it (one
// segment, so the reply pins the region until the peer has taken it).
struct PinnedReadTarget {
  hixl::Hixl target;
  std::string me;
  LocalBuffer region{64u << 20};
  hixl::MemHandle handle = nullptr;
  int fd = -1;
  std::atomic<bool> done{false};
  hixl::Status status = hixl::FAILED;
  double took = -1;  // seconds DeregisterMem took
  std::thread dereg;

  bool Start(uint64_t nonce) {
    if (!ServeOnFreePort(target, &me)) return false;
    handle = RegisterWith(target, region);
    fd = RawHandshake(me, nonce);
    return fd >= 0 && SendAll(fd, ReadRequest(1, {{region.addr(), region.size()}}));
  }
  // DeregisterMem of the region on another thread, `delay_ms` from now.
  void DeregisterAfter(int delay_ms) {
    dereg = std::thread([this, delay_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      auto t0 = std::chrono::steady_clock::now();
      status = target.DeregisterMem(handle);
      took = SecondsSince(t0);
      done = true;
    });
  }
  ~PinnedReadTarget() {
    if (fd >= 0) close(fd);  // (ends the wait if the target did not)
    if (dereg.joinable()) dereg.join();
    target.Finalize();
  }
};

TEST(RevokeStall, FramesThatMoveNothingDoNotHoldDeregisterMem) {
  // The peer never takes its READ reply and sends a USING (no reply) every
  // 200 ms. Those are no progress: DeregisterMem must close its stream after
  // the stall limit (500 ms) rather than wait as long as the peer goes on.
  PinnedReadTarget t;
  ASSERT_TRUE(t.Start(31));
  t.DeregisterAfter(300);
  hixl::wire::FrameHeader nd;
  nd.type = hixl::wire::MsgType::kUsing;
  std::vector<uint8_t> using_tcp;
  hixl::wire::EncodeUsing(hixl::tcp::kWireId, &using_tcp);
  const auto no_direct = Frame(nd, using_tcp);
  for (int i = 0; i < 22 && !t.done; ++i) {  // at most 4.4 s
    if (!SendAll(t.fd, no_direct)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  close(t.fd);
  t.fd = -1;
  t.dereg.join();
  EXPECT_EQ(t.status, hixl::SUCCESS);
  EXPECT_LT(t.took, 1.5) << "DeregisterMem waited while the peer sent frames that moved nothing";
}

TEST(RevokeStall, AReaderTakingBytesSlowlyHoldsDeregisterMemAtMostTheLimit) {
  // The peer takes its 64 MiB READ reply at about 1.6 MB/s (40 s in all): it
  // progresses, so it is not cut after 500 ms, but it holds the region at
  // most kRevokeLimit once DeregisterMem started.
  PinnedReadTarget t;
  ASSERT_TRUE(t.Start(32));
  t.DeregisterAfter(300);
  std::vector<uint8_t> chunk(16u << 10);
  timeval tv{0, 200 * 1000};
  setsockopt(t.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  auto t0 = std::chrono::steady_clock::now();
  while (!t.done && SecondsSince(t0) < 20) {
    ssize_t n = recv(t.fd, chunk.data(), chunk.size(), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) break;  // closed by the target
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  close(t.fd);
  t.fd = -1;
  t.dereg.join();
  EXPECT_EQ(t.status, hixl::SUCCESS);
  const double limit = static_cast<double>(hixl::tcp::TargetStream::kRevokeLimit.count());
  EXPECT_GT(t.took, limit - 1.0) << "a peer that was taking its reply was cut as if stalled";
  EXPECT_LT(t.took, limit + 2.0);
}

INSTANTIATE_TEST_SUITE_P(Loopback, FailureTest, AllNets(), NetName);
INSTANTIATE_TEST_SUITE_P(Loopback, FailureTcpTest, TcpNets(), NetName);

TEST(StaleRegionTable, ABatchIntoARegionDeregisteredBeforeItStartedMovesNothing) {
  // A batch naming a region the remote deregistered before the batch began
  // is PARAM_INVALID with no byte moved, as the spec says of ranges outside
  // every remote region, also when other descriptors of it name live
  // regions. A peer over tcp was not told of the deregistration: the target
  // refused the frames into the region but moved the others (FAILED, the
  // live region written). Now DeregisterMem tells tcp peers too and waits
  // for their answer. (The peer runs in its own PID namespace, so that the
  // two engines do not take each other for same-host peers.)
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a PID namespace";
  PeerProcess peer;
  peer.prefix = {"unshare", "-pf", "--"};
  ASSERT_TRUE(peer.Start());
  constexpr size_t kLen = 8u << 20;  // several frames each
  size_t gone_id = 0, kept_id = 0;
  uintptr_t gone_handle = 0;
  const uintptr_t gone = peer.AllocRegistered(kLen, &gone_id, &gone_handle);
  const uintptr_t kept = peer.AllocRegistered(kLen, &kept_id);
  ASSERT_NE(gone, 0u);
  ASSERT_NE(kept, 0u);
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  LocalBuffer local(2 * kLen);
  hixl::MemDesc md{};
  md.addr = local.addr();
  md.len = local.size();
  hixl::MemHandle mh = nullptr;
  ASSERT_EQ(e.RegisterMem(md, hixl::MEM_HOST, mh), hixl::SUCCESS);
  ASSERT_EQ(e.Connect(peer.name().c_str(), 3000), hixl::SUCCESS);
  FillPattern(local.data(), local.size(), 9);
  std::vector<hixl::TransferOpDesc> to_gone{{local.addr(), gone, kLen}};
  ASSERT_EQ(e.TransferSync(peer.name().c_str(), hixl::WRITE, to_gone, 3000), hixl::SUCCESS);  // table copied
  ASSERT_EQ(peer.Command("FILL " + std::to_string(gone_id) + " 1"), "OK");
  ASSERT_EQ(peer.Command("DEREG " + std::to_string(gone_handle)), "OK");
  const uint64_t untouched = peer.HashOf(gone_id, 0, kLen);
  EXPECT_EQ(e.TransferSync(peer.name().c_str(), hixl::WRITE, to_gone, 3000), hixl::PARAM_INVALID);
  EXPECT_EQ(e.TransferSync(peer.name().c_str(), hixl::READ, to_gone, 3000), hixl::PARAM_INVALID);
  EXPECT_EQ(peer.HashOf(gone_id, 0, kLen), untouched);
  // Half of the batch names a live region: refused whole, that one untouched too.
  const uint64_t kept_before = peer.HashOf(kept_id, 0, kLen);
  std::vector<hixl::TransferOpDesc> mixed{{local.addr(), kept, kLen}, {local.addr() + kLen, gone, kLen}};
  EXPECT_EQ(e.TransferSync(peer.name().c_str(), hixl::WRITE, mixed, 3000), hixl::PARAM_INVALID);
  EXPECT_EQ(peer.HashOf(gone_id, 0, kLen), untouched);
  EXPECT_EQ(peer.HashOf(kept_id, 0, kLen), kept_before);
  hixl::TransferReq req = nullptr;
  EXPECT_EQ(e.TransferAsync(peer.name().c_str(), hixl::WRITE, mixed, {}, req), hixl::PARAM_INVALID);
  EXPECT_EQ(peer.HashOf(kept_id, 0, kLen), kept_before);
  // The link is fine for what is still registered.
  std::vector<hixl::TransferOpDesc> to_kept{{local.addr(), kept, kLen}};
  EXPECT_EQ(e.TransferSync(peer.name().c_str(), hixl::WRITE, to_kept, 3000), hixl::SUCCESS);
  EXPECT_EQ(peer.HashOf(kept_id, 0, kLen), Hash(local.data(), kLen));
  e.Finalize();
  peer.Stop();
}

TEST(StaleRegionTable, ARefreshRacingARevocationDoesNotBringTheRegionBack) {
  // Threads that send on stream 0 also read it (a TransferSync receives its
  // own replies), so a region table (a refresh's reply) read by one thread
  // could be applied after a REVOKE that came after it, read and applied by
  // another: the region was back in the initiator's table, and a batch
  // started after DeregisterMem returned moved its live part (about 1% of
  // the rounds here). Tables and revocations are now applied by their place
  // on the stream.
  hixl::Hixl target, ini;
  std::string name;
  ASSERT_TRUE(ServeOnFreePort(target, &name));
  LocalBuffer live(8u << 20), r(4u << 20), unreg(4096), local(16u << 20);
  RegisterWith(target, live);
  ASSERT_EQ(ini.Initialize("127.0.0.1", ResourceConfig(
                                            "{\"comm_resource_config.protocol_desc\": [\"tcp:host\"], "
                                            "\"tcp.streams_per_link\": 1}",
                                            {{hixl::OPTION_BUFFER_POOL, "0:0"}})),
            hixl::SUCCESS);
  RegisterWith(ini, local);
  ASSERT_EQ(ini.Connect(name.c_str(), 5000), hixl::SUCCESS);
  auto desc = [&](size_t local_off, uintptr_t remote, size_t len) {
    return hixl::TransferOpDesc{local.addr() + local_off, remote, len};
  };
  hixl::SetLogLevel(hixl::LogLevel::kError);
  QuietStderr quiet;  // the refresher's batches are refused (and logged) on every round
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&] {  // small transfers on stream 0, each reading the stream
      const std::vector<hixl::TransferOpDesc> d{desc(9u << 20, live.addr() + (5u << 20), 64)};
      for (int i = 0; i < 1000000 && !stop; ++i) ini.TransferSync(name.c_str(), hixl::WRITE, d, 3000);
    });
  }
  threads.emplace_back([&] {  // names memory the target never registered: a refresh every time
    const std::vector<hixl::TransferOpDesc> d{desc(10u << 20, unreg.addr(), 64)};
    for (int i = 0; i < 1000000 && !stop; ++i) ini.TransferSync(name.c_str(), hixl::WRITE, d, 3000);
  });
  int rounds = 0, moved = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (SecondsSince(t0) < 3.0) {
    hixl::MemHandle h = RegisterWith(target, r);
    std::this_thread::sleep_for(std::chrono::microseconds(200 + (rounds % 7) * 50));
    ASSERT_EQ(target.DeregisterMem(h), hixl::SUCCESS);
    live.data()[0] = 0;
    local.data()[0] = 0xCD;
    const std::vector<hixl::TransferOpDesc> mixed{desc(0, live.addr(), 4u << 20), desc(4u << 20, r.addr(), 4u << 20)};
    if (ini.TransferSync(name.c_str(), hixl::WRITE, mixed, 3000) != hixl::PARAM_INVALID || live.data()[0] != 0) {
      ++moved;
    }
    ++rounds;
  }
  stop = true;
  for (auto &t : threads) t.join();
  EXPECT_GT(rounds, 100);
  EXPECT_EQ(moved, 0) << "of " << rounds << " rounds, batches started after DeregisterMem moved bytes";
  ini.Finalize();
  target.Finalize();
}

std::map<hixl::AscendString, hixl::AscendString> TcpOneStreamNoPool() {
  return ResourceConfig("{\"comm_resource_config.protocol_desc\": [\"tcp:host\"], \"tcp.streams_per_link\": 1}",
                        {{hixl::OPTION_BUFFER_POOL, "0:0"}});
}

TEST(StaleRegionTable, ARevocationNeverOvertakesATableQueuedBeforeIt) {
  // The target's REVOKE goes ahead of replies queued but not begun; it went
  // ahead of a region table made before the deregistration too (queued
  // behind a long READ reply), which then arrived after it and brought the
  // region back: a batch started after DeregisterMem returned moved its live
  // part (124 of 220 rounds in the review's run). (Found by a review.)
  hixl::Hixl target, ini;
  std::string name;
  ASSERT_TRUE(ServeOnFreePort(target, &name));
  LocalBuffer big(64u << 20), live(4u << 20), r(4u << 20), unreg(4096), local(80u << 20);
  RegisterWith(target, big);
  RegisterWith(target, live);
  ASSERT_EQ(ini.Initialize("127.0.0.1", TcpOneStreamNoPool()), hixl::SUCCESS);
  RegisterWith(ini, local);
  ASSERT_EQ(ini.Connect(name.c_str(), 5000), hixl::SUCCESS);
  auto desc = [&](size_t local_off, uintptr_t remote, size_t len) {
    return hixl::TransferOpDesc{local.addr() + local_off, remote, len};
  };
  hixl::SetLogLevel(hixl::LogLevel::kError);
  QuietStderr quiet;  // the refresher's batches are refused (and logged) every round
  int rounds = 0, moved = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (SecondsSince(t0) < 3.0 && rounds < 200) {
    hixl::MemHandle h = RegisterWith(target, r);
    hixl::TransferReq req{};
    ASSERT_EQ(ini.TransferAsync(name.c_str(), hixl::READ, {desc(0, big.addr(), 64u << 20)}, {}, req), hixl::SUCCESS);
    std::thread refresher([&] {  // names memory never registered there: a table request behind the READ
      ini.TransferSync(name.c_str(), hixl::WRITE, {desc(70u << 20, unreg.addr(), 64)}, 3000);
    });
    std::this_thread::sleep_for(std::chrono::microseconds(300 + 100 * (rounds % 5)));
    ASSERT_EQ(target.DeregisterMem(h), hixl::SUCCESS);
    refresher.join();
    EXPECT_EQ(WaitFor(ini, req, 10), hixl::TransferStatus::COMPLETED);
    live.data()[0] = 0;
    local.data()[64u << 20] = 0xCD;
    const hixl::Status st = ini.TransferSync(
        name.c_str(), hixl::WRITE, {desc(64u << 20, live.addr(), 4u << 20), desc(72u << 20, r.addr(), 4u << 20)}, 3000);
    if (st != hixl::PARAM_INVALID || live.data()[0] != 0) ++moved;
    ++rounds;
  }
  EXPECT_EQ(moved, 0) << "of " << rounds << " rounds, batches started after DeregisterMem moved bytes";
  ini.Finalize();
  target.Finalize();
}

TEST(ReadSlice, RequestsLeftInTheReaderAfterASliceAreServed) {
  // A target stream reads at most kReadSlice per event, then lets the
  // worker serve others. Requests it had already read into its buffer (not
  // in the socket any more: no EPOLLIN for them) waited for the peer's next
  // bytes, for ever without heartbeats. Here a READ of 65536 scattered
  // segments (slow to serve) is followed at once by 60 PINGs. (Found by a
  // review.)
  hixl::Hixl target;
  std::string me;
  ASSERT_TRUE(ServeOnFreePort(target, &me));
  constexpr size_t kSegs = 65536;
  LocalBuffer region(kSegs * 128);
  RegisterWith(target, region);
  std::vector<hixl::wire::Segment> segs;
  for (size_t i = 0; i < kSegs; ++i) segs.push_back({region.addr() + i * 128, 64});
  for (int round = 0; round < 5; ++round) {
    const int fd = RawHandshake(me, 700 + static_cast<uint64_t>(round));
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> out = ReadRequest(1, segs);
    for (uint64_t i = 0; i < 60; ++i) {
      hixl::wire::FrameHeader ping;
      ping.type = hixl::wire::MsgType::kPing;
      ping.req_id = 100 + i;
      const auto f = Frame(ping, {});
      out.insert(out.end(), f.begin(), f.end());
    }
    std::atomic<bool> sent{false};
    std::thread sender([&] { sent = SendAll(fd, out); });
    int replies = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (; replies < 61; ++replies) {
      uint8_t hdr[hixl::wire::kHeaderSize];
      hixl::wire::FrameHeader h;
      if (!RecvExactly(fd, hdr, sizeof(hdr), deadline) ||
          hixl::wire::DecodeHeader(hdr, &h) != hixl::wire::HeaderError::kOk) {
        break;
      }
      std::vector<uint8_t> rest(h.body_len + h.payload_len);
      if (!RecvExactly(fd, rest.data(), rest.size(), deadline)) break;
    }
    sender.join();
    EXPECT_TRUE(sent.load());
    EXPECT_EQ(replies, 61) << "round " << round << ": replies that never came within 3 s";
    close(fd);
    if (replies != 61) break;
  }
  target.Finalize();
}

TEST(ReadSlice, AStreamOfCheapRequestsDoesNotHoldItsWorker) {
  // A peer keeps its stream full of PINGs (each answered at once) and reads
  // the replies; another stream on the same (only) worker PINGs every
  // 10 ms. The slice began again each time the reply queue filled, so the
  // flood held the worker for up to seconds (a victim PING unanswered for
  // 2 s, or 1.7 s, in 3 of 8 runs of the review; this test failed 2 of 6
  // runs without the fix, 0 of 10 with it: it depends on the scheduler).
  // (Found by a review.)
  hixl::Hixl target;
  std::string me;
  ASSERT_TRUE(ServeOnFreePort(target, &me, ResourceConfig("{\"tcp.io_threads\": 1}")));
  const int flood = RawHandshake(me, 4242);
  const int victim = RawHandshake(me, 4243);
  ASSERT_GE(flood, 0);
  ASSERT_GE(victim, 0);
  std::vector<uint8_t> chunk;
  for (uint64_t i = 0; i < 32768; ++i) {
    hixl::wire::FrameHeader h;
    h.type = hixl::wire::MsgType::kPing;
    h.req_id = i + 1;
    const auto f = Frame(h, {});
    chunk.insert(chunk.end(), f.begin(), f.end());
  }
  timeval tv{0, 100000};
  setsockopt(flood, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(flood, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::atomic<bool> stop{false};
  const auto t0 = std::chrono::steady_clock::now();
  const auto hard_end = t0 + std::chrono::seconds(8);
  std::thread sender([&] {
    size_t off = 0;
    while (!stop && std::chrono::steady_clock::now() < hard_end) {
      const ssize_t n = send(flood, chunk.data() + off, chunk.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off = (off + static_cast<size_t>(n)) % chunk.size();
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        break;
      }
    }
  });
  std::thread reader([&] {
    std::vector<uint8_t> sink(1u << 20);
    while (!stop && std::chrono::steady_clock::now() < hard_end) {
      const ssize_t n = recv(flood, sink.data(), sink.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the flood is on
  double worst_ms = 0;
  int answered = 0;
  for (uint64_t i = 0; i < 300 && SecondsSince(t0) < 3.0; ++i) {
    hixl::wire::FrameHeader h;
    h.type = hixl::wire::MsgType::kPing;
    h.req_id = 1000 + i;
    const auto s0 = std::chrono::steady_clock::now();
    hixl::wire::FrameHeader r;
    if (!SendAll(victim, Frame(h, {})) || !ReadReply(victim, &r, s0 + std::chrono::seconds(2))) break;
    worst_ms = std::max(worst_ms, SecondsSince(s0) * 1000);
    ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  sender.join();
  reader.join();
  EXPECT_GT(answered, 50) << "a victim PING went unanswered for 2 s";
  EXPECT_LT(worst_ms, 500.0) << "the victim waited behind the flood";
  close(flood);
  close(victim);
  target.Finalize();
}

TEST(RevokeNotice, AnAnswerNeverGoesIntoAWriteCutByItsTimeout) {
  // The answer to a REVOKE goes ahead of requests queued but not begun. A
  // WRITE cut by its timeout has the rest of its frame sent as padding (its
  // cursor starts again), so it looked not begun: the answer went into the
  // middle of its frame, the target read garbage and closed the link
  // (every round's later WRITE failed). (Found by a review.)
  hixl::Hixl target, ini;
  std::string name;
  ASSERT_TRUE(ServeOnFreePort(target, &name));
  LocalBuffer remote(48u << 20), r(4096), local(48u << 20);
  RegisterWith(target, remote);
  ASSERT_EQ(ini.Initialize("127.0.0.1", TcpOneStreamNoPool()), hixl::SUCCESS);
  RegisterWith(ini, local);
  ASSERT_EQ(ini.Connect(name.c_str(), 5000), hixl::SUCCESS);
  hixl::SetLogLevel(hixl::LogLevel::kError);
  QuietStderr quiet;  // every cut WRITE is logged
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (int i = 0; i < 100000 && !stop; ++i) {
      hixl::MemHandle h = RegisterWith(target, r);
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      target.DeregisterMem(h);
    }
  });
  int timeouts = 0, failed = 0, rounds = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (SecondsSince(t0) < 3.0 && rounds < 300) {
    const std::vector<hixl::TransferOpDesc> cut{{local.addr(), remote.addr(), 32u << 20}};
    timeouts += ini.TransferSync(name.c_str(), hixl::WRITE, cut, 1 + rounds % 3) == hixl::TIMEOUT;
    const std::vector<hixl::TransferOpDesc> w{{local.addr() + (40u << 20), remote.addr() + (40u << 20), 4096}};
    if (ini.TransferSync(name.c_str(), hixl::WRITE, w, 3000) != hixl::SUCCESS) ++failed;
    ++rounds;
  }
  stop = true;
  churn.join();
  EXPECT_GT(timeouts, 10) << "too few WRITEs were cut to test anything";
  EXPECT_EQ(failed, 0) << "of " << rounds << " rounds";
  ini.Finalize();
  target.Finalize();
}

// Plays a target on another host for up to `n` streams of one link on
// `listen_fd`: accepts each and answers its HELLO (offering `regions`).
// Returns the streams that got that far.
std::vector<int> AcceptStreams(int listen_fd, int n, std::vector<hixl::wire::RegionInfo> regions) {
  std::vector<int> fds;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (int stream = 0; stream < n; ++stream) {
    pollfd p{listen_fd, POLLIN, 0};
    if (poll(&p, 1, 3000) <= 0) break;
    int fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) break;
    uint8_t hdr[hixl::wire::kHeaderSize];
    hixl::wire::FrameHeader h;
    std::vector<uint8_t> hello;
    if (!RecvExactly(fd, hdr, sizeof(hdr), deadline) ||
        hixl::wire::DecodeHeader(hdr, &h) != hixl::wire::HeaderError::kOk ||
        (hello.resize(h.body_len), !RecvExactly(fd, hello.data(), hello.size(), deadline))) {
      close(fd);
      break;
    }
    hixl::wire::HelloAck ack;
    ack.host.boot_id = "another host";
    ack.regions = hixl_test::HostPage(regions);
    std::vector<uint8_t> body;
    hixl::wire::EncodeHelloAck(ack, &body);
    hixl::wire::FrameHeader a;
    a.type = hixl::wire::MsgType::kHelloAck;
    if (!SendAll(fd, Frame(a, body))) {
      close(fd);
      break;
    }
    fds.push_back(fd);
  }
  return fds;
}

TEST(HostileTarget, RevokeFloodClosesTheLinkInsteadOfPilingUp) {
  // A target that answers the handshake, then sends REVOKE after REVOKE and
  // reads nothing: the initiator must not queue acknowledgements without
  // bound (nor hold its stream for the whole flood); it closes the link, and
  // calls on it end within their timeout.
  SilentListener listener;
  ASSERT_GT(listener.port, 0);
  const int ls = listener.fd;
  std::atomic<bool> stop{false};
  std::thread target([ls, &stop] {
    // The control stream and the two data streams of a tcp link.
    std::vector<int> fds = AcceptStreams(ls, 3, {});
    if (fds.empty()) return;
    // The flood, on stream 0, while it takes (the kernel buffers fill).
    std::vector<uint8_t> flood;
    for (uint64_t i = 0; i < 4096; ++i) {
      std::vector<uint8_t> body;
      hixl::wire::EncodeRevoke({0x10000 + 4096 * i, 4096}, &body);
      hixl::wire::FrameHeader r;
      r.type = hixl::wire::MsgType::kRevoke;
      r.req_id = i + 1;
      auto f = Frame(r, body);
      flood.insert(flood.end(), f.begin(), f.end());
    }
    timeval tv{0, 200000};
    setsockopt(fds[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    for (int round = 0; round < 200 && !stop.load(); ++round) {
      if (send(fds[0], flood.data(), flood.size(), MSG_NOSIGNAL) < 0 && errno != EAGAIN) break;
    }
    for (int fd : fds) close(fd);
  });
  const long peak_before = StatusMiB(getpid(), "VmHWM:");
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  hixl::SetLogLevel(hixl::LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(e.Connect(listener.name().c_str(), 3000), hixl::SUCCESS);
  LocalBuffer local(4096);
  ASSERT_NE(RegisterWith(e, local), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  // The region table is empty: PARAM_INVALID if the link were still up and
  // usable; NOT_CONNECTED or FAILED once it was closed. Either way, at once.
  std::vector<hixl::TransferOpDesc> d{{local.addr(), 0x10000, 64}};
  hixl::Status s = e.TransferSync(listener.name().c_str(), hixl::READ, d, 1000);
  EXPECT_LT(SecondsSince(t0), 1.5);
  EXPECT_NE(s, hixl::SUCCESS);
  stop.store(true);
  e.Finalize();
  std::string log = ::testing::internal::GetCapturedStderr();
  hixl::SetLogLevel(hixl::LogLevel::kError);
  // Each queued acknowledgement costs about half a KiB: 600,000 of them
  // (what 40 MB of REVOKEs made before the cap) were some 300 MiB.
  EXPECT_LT(StatusMiB(getpid(), "VmHWM:") - peak_before, 100);
  EXPECT_TRUE(log.find("REVOKEs without taking their acknowledgements") != std::string::npos) << log.substr(0, 2000);
  target.join();
}

TEST(SameHostClaim, AnUnprovenClaimGetsNoPidAndDoesNotHoldDeregisterMem) {
  // Our host identity is in every HELLO_ACK: anyone can claim it, name a
  // pid, and then never acknowledge a REVOKE. The target must check the
  // claim (the pid has to hold the far end of the socket): a false one is
  // not told the target's pid and is not waited for by DeregisterMem (which
  // waited 10 s for it before).
  PeerProcess peer;
  ASSERT_TRUE(peer.Start());
  size_t id = 0;
  uintptr_t handle = 0;
  ASSERT_NE(peer.AllocRegistered(1u << 20, &id, &handle), 0u);
  hixl::wire::HelloAck ack;
  int liar = RawHandshake(peer.name(), 81, 0, /*claim_pid=*/1, &ack);  // not the process at our end of the socket
  ASSERT_GE(liar, 0);
  EXPECT_EQ(hixl::shm::DecodePid(ack.answers), 0u) << "the target offered direct copies to an unproven peer";
  // The truth: this process does hold its end of the socket.
  hixl::wire::HelloAck honest_ack;
  int honest = RawHandshake(peer.name(), 82, 0, static_cast<uint32_t>(getpid()), &honest_ack);
  ASSERT_GE(honest, 0);
  EXPECT_EQ(hixl::shm::DecodePid(honest_ack.answers), static_cast<uint32_t>(peer.pid()));
  close(honest);  // (it would be waited for: a proven same-host peer)
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(peer.Command("DEREG " + std::to_string(handle)), "OK");
  EXPECT_LT(SecondsSince(t0), 3.0) << "DeregisterMem waited for a peer whose claim was never checked";
  close(liar);
  peer.Stop();
}

TEST(RevokeNotice, APeerThatNeverAnswersCostsOneWaitAndGetsABoundedNumberOfRevokes) {
  // DeregisterMem tells peers over tcp to forget the region and waits a
  // while for their answers. One that never answers (frozen, or hostile)
  // must not make every DeregisterMem wait: only the first until it
  // answers. Nor may it make us queue REVOKEs for it without bound: it is
  // told at most Revocation::kMaxTcpUnanswered (a legitimate initiator
  // would close the link beyond 1024 unanswered: a flood of concurrent
  // DeregisterMem from thousands of threads did that).
  hixl::Hixl target;
  std::string me;
  ASSERT_TRUE(ServeOnFreePort(target, &me));
  constexpr size_t kRegions = 300;
  LocalBuffer mem(kRegions * 4096);
  std::vector<hixl::MemHandle> handles;
  for (size_t i = 0; i < kRegions; ++i) {
    hixl::MemDesc d{};
    d.addr = mem.addr() + i * 4096;
    d.len = 4096;
    hixl::MemHandle h = nullptr;
    ASSERT_EQ(target.RegisterMem(d, hixl::MEM_HOST, h), hixl::SUCCESS);
    handles.push_back(h);
  }
  const int silent = RawHandshake(me, 83);  // reads nothing until the end
  ASSERT_GE(silent, 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(target.DeregisterMem(handles[0]), hixl::SUCCESS);
  const double first = SecondsSince(t0);
  EXPECT_GT(first, 0.2) << "the silent peer was not waited for";
  EXPECT_LT(first, 2.0);
  t0 = std::chrono::steady_clock::now();
  for (size_t i = 1; i < kRegions; ++i) EXPECT_EQ(target.DeregisterMem(handles[i]), hixl::SUCCESS);
  EXPECT_LT(SecondsSince(t0), 1.0) << "the silent peer was waited for again";
  // What it was sent: REVOKEs only (no request of its own), as many as the cap.
  size_t revokes = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  for (size_t i = 0; i < 2 * kRegions; ++i) {
    uint8_t hdr[hixl::wire::kHeaderSize];
    hixl::wire::FrameHeader h;
    std::vector<uint8_t> body;
    if (!RecvExactly(silent, hdr, sizeof(hdr), deadline) ||
        hixl::wire::DecodeHeader(hdr, &h) != hixl::wire::HeaderError::kOk || h.type != hixl::wire::MsgType::kRevoke ||
        (body.resize(h.body_len), !RecvExactly(silent, body.data(), body.size(), deadline))) {
      break;
    }
    ++revokes;
  }
  EXPECT_EQ(revokes, 256u);
  close(silent);
  target.Finalize();
}

TEST(RevokeNotice, ABusyPeerAnswersAheadOfItsQueuedWrites) {
  // The peer's answer to a REVOKE went behind every WRITE frame it had
  // queued on the stream: a healthy peer in the middle of a long transfer
  // held DeregisterMem for the whole wait (1 s then) and was marked late.
  PeerProcess peer;
  ASSERT_TRUE(peer.Start(false, "{\"tcp.streams_per_link\": 1}"));
  constexpr size_t kBlock = 64u << 20;
  size_t big_id = 0, small_id = 0;
  uintptr_t small_handle = 0;
  const uintptr_t big = peer.AllocRegistered(kBlock, &big_id);
  ASSERT_NE(big, 0u);
  ASSERT_NE(peer.AllocRegistered(4096, &small_id, &small_handle), 0u);
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", WithTransport(ResourceConfig("{\"tcp.streams_per_link\": 1}"), "tcp")),
            hixl::SUCCESS);
  LocalBuffer local(kBlock);
  RegisterWith(e, local);
  ASSERT_EQ(e.Connect(peer.name().c_str(), 3000), hixl::SUCCESS);
  // 1 GiB queued on the one stream: some hundreds of ms on loopback.
  std::vector<hixl::TransferOpDesc> d(16, hixl::TransferOpDesc{local.addr(), big, kBlock});
  hixl::TransferReq req = nullptr;
  ASSERT_EQ(e.TransferAsync(peer.name().c_str(), hixl::WRITE, d, {}, req), hixl::SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(peer.Command("DEREG " + std::to_string(small_handle)), "OK");
  const double took = SecondsSince(t0);
  hixl::TransferStatus st = WaitFor(e, req, 30);
  EXPECT_EQ(st, hixl::TransferStatus::COMPLETED);
  EXPECT_LT(took, 0.2) << "DeregisterMem waited behind the peer's queued WRITEs";
  e.Finalize();
  peer.Stop();
}

TEST(ConcurrentFinalize, TheSecondReturnsOnlyAfterTheEngineHasStopped) {
  // Finalize promises that no engine thread touches user memory once it
  // returns (the caller may free it). A second Finalize racing the first
  // returned at once, while the first was still waiting for a same-host
  // peer to acknowledge the revocation of our regions, with the engine
  // still serving peers.
  hixl::Hixl e;
  std::string name;
  for (int i = 0; i < 20; ++i) {
    name = SilentListener(false).name();
    if (e.Initialize(name.c_str(), {}) == hixl::SUCCESS) break;
  }
  LocalBuffer region(1u << 20);
  RegisterWith(e, region);
  // A proven same-host initiator (this process) that never acknowledges a
  // REVOKE: the first Finalize waits for it until its socket closes.
  hixl::wire::HelloAck ack;
  int silent = RawHandshake(name, 91, 0, static_cast<uint32_t>(getpid()), &ack);
  ASSERT_GE(silent, 0);
  ASSERT_NE(hixl::shm::DecodePid(ack.answers), 0u) << "the target did not take us for a same-host peer";
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<double> first_done{-1}, second_done{-1};
  std::thread first([&] {
    e.Finalize();
    first_done = SecondsSince(t0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread second([&] {
    e.Finalize();
    second_done = SecondsSince(t0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_LT(second_done.load(), 0) << "the second Finalize returned while the first was still stopping the engine";
  const double released = SecondsSince(t0);
  close(silent);  // the revocation ends with the link
  first.join();
  second.join();
  EXPECT_GE(second_done.load(), released);
  EXPECT_LT(first_done.load(), 5.0);
}

TEST(SilentListener, ConnectTimesOutInTime) {
  // The kernel completes the TCP handshake for a listening socket even if
  // nobody calls accept(): the perfect server that never answers.
  SilentListener silent;
  ASSERT_GT(silent.port, 0);
  std::string name = silent.name();
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(e.Connect(name.c_str(), 300), hixl::TIMEOUT);
  double secs = SecondsSince(t0);
  EXPECT_GE(secs, 0.29);
  EXPECT_LT(secs, 1.3);
  e.Finalize();
}

TEST(VersionMismatch, ConnectFails) {
  SilentListener listener;
  ASSERT_GT(listener.port, 0);
  const int ls = listener.fd;
  std::string name = listener.name();
  // A "future" server: answers every connection with a version-9 header.
  std::thread server([ls] {
    int fd = accept(ls, nullptr, nullptr);
    if (fd < 0) return;
    uint8_t hdr[hixl::wire::kHeaderSize];
    hixl::wire::FrameHeader h;
    h.type = hixl::wire::MsgType::kHelloAck;
    hixl::wire::EncodeHeader(h, hdr);
    hdr[4] = 9;
    ssize_t n = send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL);
    (void)n;
    char buf[4096];
    n = recv(fd, buf, sizeof(buf), 0);
    close(fd);
  });
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  EXPECT_EQ(e.Connect(name.c_str(), 2000), hixl::FAILED);
  e.Finalize();
  server.join();
}

// A scripted target of a tcp link with two data streams that answers nothing
// unless told: the first WRITE frame each data stream brings is left
// unanswered (so that its request times out with the frame on the wire,
// which a real target would still apply when it got to it) until
// answer[stream] is set; the later WRITE frames are counted per stream.
struct ScriptedTarget {
  static constexpr uint64_t kRegion = 0x10000000, kRegionLen = 1u << 20;
  SilentListener listener;
  std::atomic<bool> stop{false};
  std::atomic<bool> answer[2] = {false, false};
  std::atomic<int> first_on[2] = {0, 0};  // 1 once that stream's first WRITE came
  std::atomic<int> later_on[2] = {0, 0};
  std::thread thread;

  ScriptedTarget() { thread = std::thread([this] { Run(); }); }
  ~ScriptedTarget() {
    stop.store(true);
    thread.join();
  }
  std::string name() const { return listener.name(); }

  void Run() {
    std::vector<int> all = AcceptStreams(listener.fd, 3, {{kRegion, kRegionLen}});
    // all[0] is the control stream: kept open, never read.
    std::vector<int> fds(all.begin() + std::min<size_t>(all.size(), 1), all.end());
    uint64_t first_id[2] = {0, 0};
    bool answered[2] = {false, false};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fds.size() == 2 && !stop.load() && std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 2; ++i) {
        if (!answered[i] && answer[i].load() && first_on[i].load() != 0) {
          hixl::wire::FrameHeader a;
          a.type = hixl::wire::MsgType::kWriteAck;
          a.req_id = first_id[i];
          SendAll(fds[i], Frame(a, {}));
          answered[i] = true;
        }
      }
      pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
      if (poll(p, 2, 20) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if ((p[i].revents & POLLIN) == 0) continue;
        uint8_t hdr[hixl::wire::kHeaderSize];
        hixl::wire::FrameHeader h;
        auto frame_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        std::vector<uint8_t> rest;
        if (!RecvExactly(fds[i], hdr, sizeof(hdr), frame_deadline) ||
            hixl::wire::DecodeHeader(hdr, &h) != hixl::wire::HeaderError::kOk ||
            (rest.resize(h.body_len + h.payload_len), !RecvExactly(fds[i], rest.data(), rest.size(), frame_deadline))) {
          stop.store(true);
          break;
        }
        if (h.type != hixl::wire::MsgType::kWriteReq) continue;
        if (first_on[i].load() == 0) {
          first_id[i] = h.req_id;
          first_on[i].store(1);
        } else {
          ++later_on[i];
        }
      }
    }
    for (int fd : all) close(fd);
  }
};

// An engine linked to a ScriptedTarget, whose async requests time out after
// 300 ms.
class WriteFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(e_.Initialize("127.0.0.1", ResourceConfig("{\"async_transfer.timeout_ms\": 300}")), hixl::SUCCESS);
    ASSERT_EQ(e_.Connect(t_.name().c_str(), 3000), hixl::SUCCESS);
    ASSERT_NE(RegisterWith(e_, local_), nullptr);
  }
  void TearDown() override { e_.Finalize(); }
  // A 256 KiB WRITE (one frame) into the target's region.
  hixl::TransferReq PostStale() {
    hixl::TransferReq r = nullptr;
    EXPECT_EQ(e_.TransferAsync(t_.name().c_str(), hixl::WRITE, {{local_.addr(), ScriptedTarget::kRegion, 256u << 10}},
                               hixl::TransferArgs{}, r),
              hixl::SUCCESS);
    return r;
  }
  // `n` 4 KiB WRITEs into the target's region.
  void PostLater(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      hixl::TransferReq r = nullptr;
      ASSERT_EQ(e_.TransferAsync(t_.name().c_str(), hixl::WRITE,
                                 {{local_.addr(), ScriptedTarget::kRegion + i * 4096, 4096}}, hixl::TransferArgs{}, r),
                hixl::SUCCESS);
    }
  }

  ScriptedTarget t_;
  hixl::Hixl e_;
  LocalBuffer local_{1u << 20};
};

bool WaitUntil(const std::function<bool()> &cond, double seconds) {
  auto t0 = std::chrono::steady_clock::now();
  while (!cond() && SecondsSince(t0) < seconds) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return cond();
}

// A WRITE that timed out left its frame on the wire of one stream: later
// requests must go behind it on that stream, not on the other one, where
// the target could apply them first and then overwrite them with the stale
// frame (the async review saw that happen).
TEST_F(WriteFenceTest, RequestsAfterATimedOutWriteGoBehindItsFrames) {
  EXPECT_EQ(WaitFor(e_, PostStale(), 5), hixl::TransferStatus::TIMEOUT);
  ASSERT_TRUE(WaitUntil([&] { return t_.first_on[0] + t_.first_on[1] == 1; }, 2));
  const int behind = t_.first_on[0].load() != 0 ? 0 : 1;
  PostLater(8);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  t_.answer[behind].store(true);  // the stale frame is done with: what waited behind it may go
  // (Requests still waiting when their 300 ms are up never go out at all.)
  WaitUntil([&] { return t_.later_on[behind].load() == 8; }, 3);
  EXPECT_GT(t_.later_on[behind].load(), 0) << "the later requests did not go behind the timed-out one";
  EXPECT_EQ(t_.later_on[1 - behind].load(), 0) << "later requests went on the other stream";
}

// Timed-out WRITEs left frames on both streams: later requests wait until
// one of them is answered, then go behind the other (not on the stream that
// has none left: the other's stale frame could land after them).
TEST_F(WriteFenceTest, RequestsAfterTimedOutWritesOnTwoStreamsWait) {
  hixl::TransferReq a[2] = {PostStale(), PostStale()};  // one frame each, on the two streams in turn
  for (auto r : a) EXPECT_EQ(WaitFor(e_, r, 5), hixl::TransferStatus::TIMEOUT);
  ASSERT_TRUE(WaitUntil([&] { return t_.first_on[0] + t_.first_on[1] == 2; }, 2));
  PostLater(8);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(t_.later_on[0] + t_.later_on[1], 0) << "later requests went out while both streams had stale frames";
  t_.answer[0].store(true);  // stream 1 still has one: they go behind it
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(t_.later_on[0].load(), 0) << "later requests went on stream 0 while stream 1 had a stale frame";
  t_.answer[1].store(true);
  // (Requests still waiting when their 300 ms are up never go out at all.)
  WaitUntil([&] { return t_.later_on[1].load() == 8; }, 3);
  EXPECT_GT(t_.later_on[1].load(), 0) << "the later requests did not go behind the stale frame of stream 1";
  EXPECT_EQ(t_.later_on[0].load(), 0) << "later requests went on the stream without stale frames left";
}

}  // namespace
}  // namespace hixl_test
