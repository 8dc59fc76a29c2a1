// peer_failure_test.cc: a peer that dies, freezes or goes away mid-transfer;
// Finalize and DeregisterMem racing transfers; connects that cannot succeed.
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
#include "integration/failure_fixture.h"
#include "integration/raw_peer.h"
#include "integration/tcp_probe.h"

namespace hixl_test {
namespace {

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
  const uint64_t before = BytesDeliveredTo(PortOf(remote_));
  hixl::Status s = hixl::SUCCESS;
  std::thread reader([&] { s = Transfer(hixl::READ, {{other.addr(), remote_addr_, other.size()}}, 1500); });
  // The READ has left (the frozen peer's kernel took it), so it holds the region.
  ASSERT_TRUE(WaitUntil([&] { return BytesDeliveredTo(PortOf(remote_)) > before; }, 1.0));
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
  std::atomic<int> done{0}, moved{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // Each thread its own quarter of the buffers: READs write into the
      // local one, and the threads must not race on it (TSan).
      const auto all = BigBatch();
      std::vector<hixl::TransferOpDesc> batch;
      for (size_t i = t; i < all.size(); i += 4) batch.push_back(all[i]);
      for (int i = 0; i < 50; ++i) {
        if (Transfer(i % 2 ? hixl::READ : hixl::WRITE, batch, 10000) != hixl::SUCCESS) break;
        ++moved;
      }
      ++done;
    });
  }
  // Transfers are running: some have completed, others are in flight.
  ASSERT_TRUE(WaitUntil([&] { return moved.load() >= 4; }, 10.0));
  auto t0 = std::chrono::steady_clock::now();
  engine_.Finalize();
  EXPECT_LT(SecondsSince(t0), 2.0);
  for (auto &th : threads) th.join();
  EXPECT_LT(SecondsSince(t0), 3.0);
  EXPECT_EQ(done.load(), 4);
  ExpectLocalBufferQuiet();
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
  const uint64_t before = BytesDeliveredTo(PortOf(remote_));
  std::thread transfer([&] { Transfer(hixl::WRITE, BigBatch(), 600); });
  // The WRITE is under way (the frozen peer's kernel is taking its bytes).
  ASSERT_TRUE(WaitUntil([&] { return BytesDeliveredTo(PortOf(remote_)) > before; }, 1.0));
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

INSTANTIATE_TEST_SUITE_P(Loopback, FailureTest, AllNets(), NetName);
#ifdef HIXL_TEST_UCX
INSTANTIATE_TEST_SUITE_P(Ucx, FailureTest, UcxNets(), NetName);
#endif

INSTANTIATE_TEST_SUITE_P(Loopback, FailureTcpTest, TcpNets(), NetName);

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
  // The first Finalize is waiting for us: it has sent us its REVOKE.
  pollfd revoke{silent, POLLIN, 0};
  ASSERT_EQ(poll(&revoke, 1, 3000), 1) << "no REVOKE came";
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

}  // namespace
}  // namespace hixl_test
