// async_test.cc: TransferAsync and its status, ConnectAsync/DisconnectAsync
// and the connect pool, AutoConnect, heartbeats, the channel pool.
#include <signal.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "integration/fixture.h"
#include "integration/tcp_probe.h"
#include "integration/net_util.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl_test {
namespace {

using Options = std::map<hixl::AscendString, hixl::AscendString>;

hixl::AsyncConnectStatus WaitConnect(hixl::Hixl &e, const std::string &remote, hixl::AsyncConnectStatus want,
                                     double seconds) {
  auto t0 = std::chrono::steady_clock::now();
  hixl::AsyncConnectStatus st = hixl::AsyncConnectStatus::NOT_CONNECT;
  while (SecondsSince(t0) < seconds) {
    e.GetAsyncConnectStatus(remote.c_str(), st);
    if (st == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return st;
}

class AsyncTest : public PeerTest {
 protected:
  void SetUp() override { Start(Options{}); }
  void Start(const Options &opts) {
    StartAll("", opts);
    remote_addr_ = peer_.AllocRegistered(kLen, &remote_id_);
    ASSERT_NE(remote_addr_, 0u);
    local_ = std::make_unique<LocalBuffer>(kLen);
    RegisterLocal(*local_);
  }
  void Restart(const Options &opts) {
    engine_.Finalize();
    peer_.Stop();
    Start(opts);
  }
  hixl::TransferReq Post(hixl::TransferOp op, size_t local_off, size_t remote_off, size_t len,
                         const void *user_data = nullptr) {
    hixl::TransferArgs args;
    args.user_data = user_data;
    hixl::TransferReq req = nullptr;
    EXPECT_EQ(engine_.TransferAsync(remote_.c_str(), op, {{local_->addr() + local_off, remote_addr_ + remote_off, len}},
                                    args, req),
              hixl::SUCCESS);
    return req;
  }

  static constexpr size_t kLen = 32u << 20;
  std::unique_ptr<LocalBuffer> local_;
  uintptr_t remote_addr_ = 0;
  size_t remote_id_ = 0;
};

TEST_P(AsyncTest, ErrorsAreReturnedAtOnce) {
  hixl::TransferReq req = nullptr;
  hixl::TransferArgs args;
  std::vector<hixl::TransferOpDesc> ok{{local_->addr(), remote_addr_, 64}};
  EXPECT_EQ(engine_.TransferAsync(remote_.c_str(), hixl::WRITE, ok, args, req), hixl::NOT_CONNECTED);
  EXPECT_EQ(engine_.TransferAsync("garbage", hixl::WRITE, ok, args, req), hixl::PARAM_INVALID);
  // Nothing to move: SUCCESS, connected or not, as TransferSync.
  EXPECT_EQ(engine_.TransferSync(remote_.c_str(), hixl::WRITE, {}, 1000), hixl::SUCCESS);
  req = nullptr;
  ASSERT_EQ(engine_.TransferAsync(remote_.c_str(), hixl::WRITE, {}, args, req), hixl::SUCCESS);
  EXPECT_EQ(WaitFor(engine_, req, 1), hixl::TransferStatus::COMPLETED);
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  EXPECT_EQ(engine_.TransferAsync(remote_.c_str(), static_cast<hixl::TransferOp>(5), ok, args, req),
            hixl::PARAM_INVALID);
  std::vector<hixl::TransferOpDesc> zero{{local_->addr(), remote_addr_, 0}};
  EXPECT_EQ(engine_.TransferAsync(remote_.c_str(), hixl::WRITE, zero, args, req), hixl::PARAM_INVALID);
  std::vector<hixl::TransferOpDesc> outside{{local_->addr(), remote_addr_ + kLen - 8, 16}};
  EXPECT_EQ(engine_.TransferAsync(remote_.c_str(), hixl::WRITE, outside, args, req), hixl::PARAM_INVALID);
  hixl::TransferStatus st;
  EXPECT_EQ(engine_.GetTransferStatus(reinterpret_cast<hixl::TransferReq>(0x7777), st), hixl::PARAM_INVALID);
  EXPECT_EQ(engine_.GetTransferStatus(nullptr, st), hixl::PARAM_INVALID);
}

TEST_P(AsyncTest, CompletesWithDataAndIsReleasedOnceReported) {
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  FillPattern(local_->data(), 1u << 20, 42);
  hixl::TransferReq w = Post(hixl::WRITE, 0, 4096, 1u << 20);
  EXPECT_EQ(WaitFor(engine_, w, 10), hixl::TransferStatus::COMPLETED);
  EXPECT_EQ(peer_.HashOf(remote_id_, 4096, 1u << 20), Hash(local_->data(), 1u << 20));
  hixl::TransferStatus st;
  EXPECT_EQ(engine_.GetTransferStatus(w, st), hixl::PARAM_INVALID);  // released
  hixl::TransferReq r = Post(hixl::READ, 2u << 20, 4096, 1u << 20);
  EXPECT_EQ(WaitFor(engine_, r, 10), hixl::TransferStatus::COMPLETED);
  EXPECT_EQ(std::memcmp(local_->data(), local_->data() + (2u << 20), 1u << 20), 0);
}


TEST_P(AsyncTest, TwoThreadsPollingTheSameRequestsSeeEachFinishOnce) {
  // A caller that frees per-request state when a request is reported
  // finished must hear it once, whichever of its threads asks.
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  constexpr int kRounds = 40, kReqs = 32;
  int twice = 0, never = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<hixl::TransferReq> reqs;
    for (int i = 0; i < kReqs; ++i) reqs.push_back(Post(hixl::WRITE, 0, 0, 256u << 10));
    std::vector<std::atomic<int>> reported(kReqs);
    auto poll = [&] {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<bool> gone(kReqs);
      for (int left = kReqs; left > 0 && SecondsSince(t0) < 10;) {
        for (int i = 0; i < kReqs; ++i) {
          if (gone[i]) continue;
          hixl::TransferStatus st = hixl::TransferStatus::WAITING;
          hixl::Status s = engine_.GetTransferStatus(reqs[i], st);
          if (s == hixl::SUCCESS && st == hixl::TransferStatus::WAITING) continue;
          if (s == hixl::SUCCESS) reported[i]++;
          gone[i] = true;
          --left;
        }
      }
    };
    std::thread a(poll), b(poll);
    a.join();
    b.join();
    for (auto &n : reported) {
      twice += n > 1;
      never += n == 0;
    }
  }
  EXPECT_EQ(twice, 0) << "requests reported finished to both threads";
  EXPECT_EQ(never, 0) << "requests never reported finished";
}
TEST_P(AsyncTest, RequestsOfAnotherEngineOrOfBeforeFinalizeAreUnknown) {
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  hixl::TransferReq mine = Post(hixl::WRITE, 0, 0, 4096);
  // A second engine, with a request of its own.
  hixl::Hixl other;
  ASSERT_EQ(other.Initialize(GetParam().v6 ? "[::1]" : "127.0.0.1", WithTransport({}, GetParam().transport)),
            hixl::SUCCESS);
  LocalBuffer buf(4096);
  ASSERT_NE(RegisterWith(other, buf), nullptr);
  ASSERT_EQ(other.Connect(remote_.c_str(), 3000), hixl::SUCCESS);
  hixl::TransferReq theirs = nullptr;
  ASSERT_EQ(other.TransferAsync(remote_.c_str(), hixl::WRITE, {{buf.addr(), remote_addr_ + 8192, 4096}},
                                hixl::TransferArgs{}, theirs),
            hixl::SUCCESS);
  EXPECT_NE(mine, theirs);
  hixl::TransferStatus st;
  // Neither engine answers for (and so releases) the other's request.
  EXPECT_EQ(other.GetTransferStatus(mine, st), hixl::PARAM_INVALID);
  EXPECT_EQ(engine_.GetTransferStatus(theirs, st), hixl::PARAM_INVALID);
  EXPECT_EQ(WaitFor(engine_, mine, 10), hixl::TransferStatus::COMPLETED);
  EXPECT_EQ(WaitFor(other, theirs, 10), hixl::TransferStatus::COMPLETED);
  other.Finalize();
  // A request left unreported when the engine finalized is unknown after
  // it is initialized again, and the new engine's requests are new ones.
  hixl::TransferReq before = Post(hixl::WRITE, 0, 0, 4096);
  Restart(Options{});
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  hixl::TransferReq after = Post(hixl::WRITE, 0, 0, 4096);
  EXPECT_NE(before, after);
  EXPECT_EQ(engine_.GetTransferStatus(before, st), hixl::PARAM_INVALID);
  EXPECT_EQ(WaitFor(engine_, after, 10), hixl::TransferStatus::COMPLETED);
}

TEST_P(AsyncTest, ThousandInFlightOnOneLink) {
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  constexpr size_t kN = 1000;
  constexpr size_t kBlock = 16u << 10;
  FillPattern(local_->data(), kN * kBlock, 77);
  std::vector<int> tags(kN);
  for (size_t i = 0; i < kN; ++i) {
    tags[i] = static_cast<int>(i);
    // Scatter: request i writes local block i to remote block (i * 7) % kN.
    Post(hixl::WRITE, i * kBlock, ((i * 7) % kN) * kBlock, kBlock, &tags[i]);
  }
  std::vector<bool> seen(kN, false);
  size_t done = 0;
  auto t0 = std::chrono::steady_clock::now();
  while (done < kN && SecondsSince(t0) < 30) {
    std::vector<hixl::TransferResult> results;
    hixl::GetTransferStatusArgs args;
    args.skip_waiting = true;
    ASSERT_EQ(engine_.GetTransferStatus(args, results), hixl::SUCCESS);
    for (const auto &r : results) {
      ASSERT_EQ(r.status, hixl::TransferStatus::COMPLETED);
      int tag = *static_cast<const int *>(r.user_data);
      ASSERT_FALSE(seen[tag]) << "reported twice: " << tag;
      seen[tag] = true;
      ++done;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(done, kN);
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_EQ(peer_.HashOf(remote_id_, ((i * 7) % kN) * kBlock, kBlock), Hash(local_->data() + i * kBlock, kBlock))
        << "block " << i;
  }
}

TEST_P(AsyncTest, RequestsThatAreNeverPolledStillComplete) {
  // Requests posted while others are in flight may wait in the stream's
  // inbox for the next reply (TCP); polls also lend their thread. Without
  // any poll, the engine's own threads must still move every byte.
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  constexpr size_t kN = 64, kBlock = 64u << 10, kBytes = kN * kBlock;
  FillPattern(local_->data(), kBytes, 91);
  std::vector<hixl::TransferReq> reqs;
  for (size_t i = 0; i < kN; ++i) reqs.push_back(Post(hixl::WRITE, i * kBlock, i * kBlock, kBlock));
  const uint64_t want = Hash(local_->data(), kBytes);
  auto t0 = std::chrono::steady_clock::now();
  bool written = false;
  while (!written && SecondsSince(t0) < 10) {
    written = peer_.HashOf(remote_id_, 0, kBytes) == want;
    if (!written) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(written) << "the writes did not all land without polling";
  // Reads back, again without polling until the bytes are here.
  uint8_t *back = local_->data() + kBytes;
  std::memset(back, 0, kBytes);
  for (size_t i = 0; i < kN; ++i) reqs.push_back(Post(hixl::READ, kBytes + i * kBlock, i * kBlock, kBlock));
  t0 = std::chrono::steady_clock::now();
  bool read = false;
  while (!read && SecondsSince(t0) < 10) {
    read = Hash(back, kBytes) == want;
    if (!read) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(read) << "the reads did not all land without polling";
  for (auto r : reqs) EXPECT_EQ(WaitFor(engine_, r, 5), hixl::TransferStatus::COMPLETED);
}

TEST_P(AsyncTest, SyncCallsGoOnWhenAnAsyncPollerStopsPolling) {
  // A poller that lends its thread keeps the I/O worker away from the
  // stream for a moment; when it stops polling with requests in flight,
  // the worker must take over: a TransferSync behind them finishes at once
  // and the async requests complete.
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  constexpr size_t kN = 32, kBlock = 64u << 10;
  FillPattern(local_->data(), 2 * kN * kBlock, 17);
  std::vector<hixl::TransferReq> reqs;
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kN; ++i) reqs.push_back(Post(hixl::WRITE, i * kBlock, i * kBlock, kBlock));
    for (auto r : reqs) EXPECT_EQ(WaitFor(engine_, r, 10), hixl::TransferStatus::COMPLETED);
    reqs.clear();
  }
  for (size_t i = 0; i < kN; ++i) reqs.push_back(Post(hixl::WRITE, (kN + i) * kBlock, (kN + i) * kBlock, kBlock));
  hixl::TransferStatus st;
  ASSERT_EQ(engine_.GetTransferStatus(reqs.back(), st), hixl::SUCCESS);  // one poll, then none
  const size_t off = 8u << 20;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Transfer(hixl::READ, {{local_->addr() + off, remote_addr_, 1u << 20}}, 5000), hixl::SUCCESS);
  EXPECT_LT(SecondsSince(t0), 1.0);
  EXPECT_EQ(std::memcmp(local_->data() + off, local_->data(), 1u << 20), 0);
  if (st == hixl::TransferStatus::WAITING) {
    EXPECT_EQ(WaitFor(engine_, reqs.back(), 5), hixl::TransferStatus::COMPLETED);
  }
  reqs.pop_back();
  for (auto r : reqs) EXPECT_EQ(WaitFor(engine_, r, 5), hixl::TransferStatus::COMPLETED);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 2 * kN * kBlock), Hash(local_->data(), 2 * kN * kBlock));
}

TEST_P(AsyncTest, AsyncPollerAndSyncCallerShareALink) {
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  constexpr size_t kBlock = 64u << 10, kDepth = 16, kArea = kDepth * kBlock;
  const size_t sync_off = 16u << 20;
  FillPattern(local_->data(), kArea, 5);
  std::atomic<bool> sync_ok{true};
  std::thread sync_caller([&] {
    for (int i = 0; i < 40 && sync_ok; ++i) {
      uint8_t *out = local_->data() + sync_off;
      uint8_t *in = out + (1u << 20);
      FillPattern(out, 256u << 10, static_cast<uint32_t>(1000 + i));
      if (Transfer(hixl::WRITE, {{local_->addr() + sync_off, remote_addr_ + sync_off, 256u << 10}}) != hixl::SUCCESS ||
          Transfer(hixl::READ, {{local_->addr() + sync_off + (1u << 20), remote_addr_ + sync_off, 256u << 10}}) !=
              hixl::SUCCESS ||
          std::memcmp(out, in, 256u << 10) != 0) {
        sync_ok = false;
      }
    }
  });
  for (int round = 0; round < 20; ++round) {
    std::vector<hixl::TransferReq> reqs;
    for (size_t i = 0; i < kDepth; ++i) reqs.push_back(Post(hixl::WRITE, i * kBlock, i * kBlock, kBlock));
    for (auto r : reqs) ASSERT_EQ(WaitFor(engine_, r, 10), hixl::TransferStatus::COMPLETED);
  }
  sync_caller.join();
  EXPECT_TRUE(sync_ok);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, kArea), Hash(local_->data(), kArea));
}

// Tests that freeze the peer to keep requests waiting: TCP only (shm
// copies complete into a frozen peer).
class AsyncTcpTest : public AsyncTest {};

TEST_P(AsyncTcpTest, BulkQueryHonoursMaxCountAndSkipWaiting) {
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  std::vector<hixl::TransferReq> finished;
  for (int i = 0; i < 4; ++i) finished.push_back(Post(hixl::WRITE, 0, i * 4096, 4096));
  // Let them finish without asking (4 KiB each on loopback: microseconds).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  peer_.Kill(SIGSTOP);
  for (int i = 0; i < 3; ++i) Post(hixl::READ, 1u << 20, 0, 1u << 20);  // stuck: WAITING
  std::vector<hixl::TransferResult> results;
  hixl::GetTransferStatusArgs two;
  two.max_query_count = 2;
  ASSERT_EQ(engine_.GetTransferStatus(two, results), hixl::SUCCESS);
  EXPECT_EQ(results.size(), 2u);
  for (const auto &r : results) EXPECT_EQ(r.status, hixl::TransferStatus::COMPLETED);
  hixl::GetTransferStatusArgs finished_only;
  finished_only.skip_waiting = true;
  ASSERT_EQ(engine_.GetTransferStatus(finished_only, results), hixl::SUCCESS);
  EXPECT_EQ(results.size(), 2u);  // the other two finished; the stuck three are skipped
  hixl::GetTransferStatusArgs all;
  ASSERT_EQ(engine_.GetTransferStatus(all, results), hixl::SUCCESS);
  EXPECT_EQ(results.size(), 3u);
  for (const auto &r : results) EXPECT_EQ(r.status, hixl::TransferStatus::WAITING);
  peer_.Kill(SIGCONT);
}

TEST_P(AsyncTcpTest, DeadlineTurnsIntoTimeoutAndReleasesTheBuffer) {
  Restart(ResourceConfig("{\"async_transfer.timeout_ms\": 300}"));
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  peer_.Kill(SIGSTOP);
  hixl::TransferReq r = Post(hixl::READ, 0, 0, 16u << 20);
  double took = 0;
  EXPECT_EQ(WaitFor(engine_, r, 5, &took), hixl::TransferStatus::TIMEOUT);
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 1.3);
  uint64_t h = Hash(local_->data(), 16u << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(Hash(local_->data(), 16u << 20), h);
  peer_.Kill(SIGCONT);
}

TEST_P(AsyncTcpTest, AnUnpolledRequestTimesOutByItselfAmidFinishedOnes) {
  // The housekeeper times requests out without anyone polling (it lets go of
  // the buffer: DeregisterMem, which waits for it, returns), also among
  // many finished requests nobody has asked about (it no longer walks them).
  Restart(ResourceConfig("{\"async_transfer.timeout_ms\": 500}"));
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  for (int i = 0; i < 2000; ++i) Post(hixl::WRITE, 0, 0, 64);  // finished, never asked about
  hixl::TransferReq last = Post(hixl::WRITE, 0, 0, 64);
  EXPECT_EQ(WaitFor(engine_, last, 5), hixl::TransferStatus::COMPLETED);
  LocalBuffer other(1u << 20);
  hixl::MemHandle h = RegisterLocal(other);
  peer_.Kill(SIGSTOP);
  hixl::TransferReq stuck = nullptr;
  ASSERT_EQ(engine_.TransferAsync(remote_.c_str(), hixl::READ, {{other.addr(), remote_addr_, 1u << 20}},
                                  hixl::TransferArgs{}, stuck),
            hixl::SUCCESS);
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<bool> deregistered{false};
  std::thread watchdog([&] {  // should the timeout never come, the peer's answer ends the wait
    while (!deregistered && SecondsSince(t0) < 4) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    peer_.Kill(SIGCONT);
  });
  EXPECT_EQ(engine_.DeregisterMem(h), hixl::SUCCESS);  // waits for the request to let go
  const double took = SecondsSince(t0);
  deregistered = true;
  watchdog.join();
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 2.0);
  hixl::TransferStatus st = hixl::TransferStatus::WAITING;
  ASSERT_EQ(engine_.GetTransferStatus(stuck, st), hixl::SUCCESS);
  EXPECT_EQ(st, hixl::TransferStatus::TIMEOUT);
  hixl::GetTransferStatusArgs all;
  std::vector<hixl::TransferResult> results;
  ASSERT_EQ(engine_.GetTransferStatus(all, results), hixl::SUCCESS);
  EXPECT_EQ(results.size(), 2000u);  // the unasked ones are all still there to report
}

TEST_P(AsyncTest, ARequestThatTimesOutWhileBeingSubmittedLeavesTheBufferAlone) {
  // Handing 200,000 descriptors to the link takes longer than the 1 ms
  // deadline, so the request finishes while TransferAsync is still
  // submitting it. Once it is reported finished, nothing more may land in
  // the caller's buffer, not even from frames submitted after the deadline.
  Restart(ResourceConfig("{\"async_transfer.timeout_ms\": 1}"));
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  constexpr size_t kN = 200000, kSeg = 64, kStride = 128;
  static_assert(kN * kStride <= kLen);
  std::memset(local_->data(), 7, kN * kStride);
  ASSERT_EQ(Transfer(hixl::WRITE, {{local_->addr(), remote_addr_, kN * kStride}}, 10000), hixl::SUCCESS);
  std::memset(local_->data(), 0, kN * kStride);
  std::vector<hixl::TransferOpDesc> d;
  for (size_t i = 0; i < kN; ++i) d.push_back({local_->addr() + i * kStride, remote_addr_ + i * kStride, kSeg});
  std::atomic<int> seen{-1};
  std::thread watcher([&] {
    // A caller that polls everything and reuses a buffer as soon as its
    // request is reported finished.
    auto t0 = std::chrono::steady_clock::now();
    while (SecondsSince(t0) < 10) {
      hixl::GetTransferStatusArgs args;
      std::vector<hixl::TransferResult> results;
      engine_.GetTransferStatus(args, results);
      for (const auto &r : results) {
        if (r.status == hixl::TransferStatus::WAITING) continue;
        std::memset(local_->data(), 0, kN * kStride);
        seen = static_cast<int>(r.status);
        return;
      }
    }
  });
  hixl::TransferReq req = nullptr;
  hixl::TransferArgs args;
  EXPECT_EQ(engine_.TransferAsync(remote_.c_str(), hixl::READ, d, args, req), hixl::SUCCESS);
  watcher.join();
  ASSERT_NE(seen.load(), -1) << "the request was never reported finished";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  size_t landed = 0;
  for (size_t i = 0; i < kN * kStride; ++i) landed += local_->data()[i] == 7;
  EXPECT_EQ(landed, 0u) << "bytes landed after the request was reported finished (status " << seen.load() << ")";
}

TEST_P(AsyncTcpTest, CallsThatTimeOutDoNotHurtOtherThreadsOnTheLink) {
  // One thread's calls keep timing out (1-3 ms for 16 MiB), which cancels
  // them mid-flight and may close the streams they were on; another
  // thread's small calls on the same link go on meanwhile. Nothing may
  // crash, and whatever the second thread's calls report as done must be.
  Restart({{hixl::OPTION_AUTO_CONNECT, "1"}});
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  constexpr size_t kSlice = 16u << 20;
  static_assert(2 * kSlice <= kLen);
  std::atomic<int> ok{0}, mismatches{0};
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::thread small([&] {
    uint8_t *buf = local_->data();
    for (int it = 0; it < 100000 && std::chrono::steady_clock::now() < end; ++it) {
      size_t n = 4096 + static_cast<size_t>(it % 7) * 10000;
      std::memset(buf, it & 0xff, n);
      std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, n}};
      if (Transfer(hixl::WRITE, d, 2000) != hixl::SUCCESS) continue;
      std::memset(buf, 0, n);
      if (Transfer(hixl::READ, d, 2000) != hixl::SUCCESS) continue;
      for (size_t i = 0; i < n; ++i) {
        if (buf[i] != static_cast<uint8_t>(it & 0xff)) {
          ++mismatches;
          break;
        }
      }
      ++ok;
    }
  });
  std::thread cancelled([&] {
    std::vector<hixl::TransferOpDesc> d{{local_->addr() + kSlice, remote_addr_ + kSlice, kSlice}};
    for (int it = 0; it < 100000 && std::chrono::steady_clock::now() < end; ++it) {
      Transfer(it % 2 ? hixl::READ : hixl::WRITE, d, 1 + it % 3);
    }
  });
  small.join();
  cancelled.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(ok.load(), 0);
  std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, 4096}};
  EXPECT_EQ(Transfer(hixl::WRITE, d, 3000), hixl::SUCCESS);
}

TEST_P(AsyncTest, PeerKilledWithTransfersInFlight) {
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  std::vector<hixl::TransferReq> reqs;
  // About 1 GiB in all: hundreds of ms even over shm, so the kill lands
  // in the middle.
  constexpr int kN = 1000;
  const uint64_t before = BytesDeliveredTo(PortOf(remote_));
  for (int i = 0; i < kN; ++i) reqs.push_back(Post(i % 2 ? hixl::READ : hixl::WRITE, (i % 16) << 20, (i % 16) << 20, 1u << 20));
  // Under way: over tcp bytes have left; over shm the first copies ran.
  const bool tcp = GetParam().transport == std::string("tcp");
  ASSERT_TRUE(WaitUntil([&] { return !tcp || BytesDeliveredTo(PortOf(remote_)) > before; }, 2.0));
  peer_.Kill(SIGKILL);
  auto t0 = std::chrono::steady_clock::now();
  int completed = 0, failed = 0;
  for (auto r : reqs) {
    hixl::TransferStatus st = WaitFor(engine_, r, 5);
    if (st == hixl::TransferStatus::COMPLETED) ++completed;
    if (st == hixl::TransferStatus::FAILED || st == hixl::TransferStatus::TIMEOUT) ++failed;
  }
  EXPECT_EQ(completed + failed, kN);
  EXPECT_GT(failed, 0);
  EXPECT_LT(SecondsSince(t0), 2.0);
}

TEST_P(AsyncTest, ConnectAsyncStatesAndDisconnectAsync) {
  hixl::AsyncConnectStatus st;
  EXPECT_EQ(engine_.GetAsyncConnectStatus(remote_.c_str(), st), hixl::SUCCESS);
  EXPECT_EQ(st, hixl::AsyncConnectStatus::NOT_CONNECT);
  EXPECT_EQ(engine_.ConnectAsync("nonsense", 1000), hixl::PARAM_INVALID);
  EXPECT_EQ(engine_.ConnectAsync(remote_.c_str(), 0), hixl::PARAM_INVALID);
  EXPECT_EQ(engine_.DisconnectAsync(remote_.c_str(), -1), hixl::PARAM_INVALID);
  ASSERT_EQ(engine_.ConnectAsync(remote_.c_str(), 3000), hixl::SUCCESS);
  EXPECT_EQ(WaitConnect(engine_, remote_, hixl::AsyncConnectStatus::CONNECTED, 5), hixl::AsyncConnectStatus::CONNECTED);
  std::map<hixl::AscendString, hixl::AsyncConnectStatus> all;
  ASSERT_EQ(engine_.GetAsyncConnectStatus(all), hixl::SUCCESS);
  ASSERT_EQ(all.count(remote_.c_str()), 1u);
  EXPECT_EQ(all[remote_.c_str()], hixl::AsyncConnectStatus::CONNECTED);
  // The link works.
  std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, 4096}};
  EXPECT_EQ(Transfer(hixl::WRITE, d), hixl::SUCCESS);
  ASSERT_EQ(engine_.DisconnectAsync(remote_.c_str(), 1000), hixl::SUCCESS);
  EXPECT_EQ(WaitConnect(engine_, remote_, hixl::AsyncConnectStatus::NOT_CONNECT, 5),
            hixl::AsyncConnectStatus::NOT_CONNECT);
  EXPECT_EQ(Transfer(hixl::WRITE, d), hixl::NOT_CONNECTED);
  // A refused remote ends CONNECT_FAILED.
  SilentListener closed_port_holder;
  std::string refused = "127.0.0.1:" + std::to_string(closed_port_holder.port);
  close(closed_port_holder.fd);
  closed_port_holder.fd = socket(AF_INET, SOCK_STREAM, 0);  // the port now refuses
  ASSERT_EQ(engine_.ConnectAsync(refused.c_str(), 1000), hixl::SUCCESS);
  EXPECT_EQ(WaitConnect(engine_, refused, hixl::AsyncConnectStatus::CONNECT_FAILED, 5),
            hixl::AsyncConnectStatus::CONNECT_FAILED);
  // The map overload names each remote as the caller spelled it (a lookup
  // by the caller's own name must find it).
  const std::string spelled = "[0:0:0:0:0:0:0:1]:" + std::to_string(closed_port_holder.port);
  ASSERT_EQ(engine_.ConnectAsync(spelled.c_str(), 1000), hixl::SUCCESS);
  WaitConnect(engine_, spelled, hixl::AsyncConnectStatus::CONNECT_FAILED, 5);
  ASSERT_EQ(engine_.GetAsyncConnectStatus(all), hixl::SUCCESS);
  EXPECT_EQ(all.count(spelled.c_str()), 1u);
  EXPECT_EQ(all.count(refused.c_str()), 1u);
}

TEST_P(AsyncTest, MixingSyncAndAsyncConnectDoesNotCrash) {
  for (int i = 0; i < 20; ++i) {
    engine_.ConnectAsync(remote_.c_str(), 1000);
    engine_.Connect(remote_.c_str(), 1000);
    engine_.DisconnectAsync(remote_.c_str(), 1000);
    engine_.Disconnect(remote_.c_str(), 1000);
  }
  hixl::AsyncConnectStatus st;
  WaitConnect(engine_, remote_, hixl::AsyncConnectStatus::NOT_CONNECT, 5);
  ASSERT_EQ(engine_.GetAsyncConnectStatus(remote_.c_str(), st), hixl::SUCCESS);
  // Whatever the interleaving, the engine still connects and transfers.
  hixl::Status s = Connect();
  EXPECT_TRUE(s == hixl::SUCCESS || s == hixl::ALREADY_CONNECTED);
  std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, 4096}};
  EXPECT_EQ(Transfer(hixl::WRITE, d), hixl::SUCCESS);
}

TEST_P(AsyncTest, AutoConnectConnectsFirstAndAfterTheRemoteRestarts) {
  Restart({{hixl::OPTION_AUTO_CONNECT, "1"}});
  std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, 1u << 20}};
  FillPattern(local_->data(), 1u << 20, 5);
  ASSERT_EQ(Transfer(hixl::WRITE, d), hixl::SUCCESS);  // no Connect: AutoConnect does it
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 1u << 20), Hash(local_->data(), 1u << 20));
  // The remote dies and comes back on the same address (with new memory).
  std::string name = peer_.name();
  peer_.Kill(SIGKILL);
  peer_.Stop();
  ASSERT_TRUE(peer_.StartAt(name));
  size_t id = 0;
  uintptr_t addr = peer_.AllocRegistered(1u << 20, &id);
  ASSERT_NE(addr, 0u);
  FillPattern(local_->data(), 1u << 20, 6);
  std::vector<hixl::TransferOpDesc> d2{{local_->addr(), addr, 1u << 20}};
  ASSERT_EQ(Transfer(hixl::WRITE, d2, 5000), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(id, 0, 1u << 20), Hash(local_->data(), 1u << 20));
  hixl::NotifyDesc n{"after", "restart"};
  EXPECT_EQ(engine_.SendNotify(remote_.c_str(), n, 3000), hixl::SUCCESS);
}

TEST_P(AsyncTest, HeartbeatsNoticeAFrozenPeer) {
  Restart(ResourceConfig("{\"heartbeat.interval_ms\": 200}"));
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  peer_.Kill(SIGSTOP);
  // Ping after 200 ms quiet, dead after 400 ms more without an answer.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, 4096}};
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Transfer(hixl::WRITE, d, 5000), hixl::FAILED);  // at once, not after 5 s
  EXPECT_LT(SecondsSince(t0), 0.5);
  peer_.Kill(SIGCONT);
}

TEST_P(AsyncTest, AnIdleLinkSurvivesTheShortestHeartbeat) {
  // At 100 ms the target drops a stream silent for 300 ms; the initiator's
  // checks run every 100 ms or later, so its pings need slack for a late check.
  Restart(ResourceConfig("{\"heartbeat.interval_ms\": 100}"));
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, 4096}};
  for (int round = 0; round < 4; ++round) {  // 4 x 800 ms idle, then one write each
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    FillPattern(local_->data(), 4096, 20 + round);
    // Without AutoConnect a link the target dropped fails the write.
    ASSERT_EQ(Transfer(hixl::WRITE, d, 3000), hixl::SUCCESS) << "round " << round;
    EXPECT_EQ(peer_.HashOf(remote_id_, 0, 4096), Hash(local_->data(), 4096));
  }
}

INSTANTIATE_TEST_SUITE_P(Loopback, AsyncTest, AllNets(), NetName);
INSTANTIATE_TEST_SUITE_P(Loopback, AsyncTcpTest, TcpNets(), NetName);

TEST(ConnectPool, QueueOverflowIsRESOURCE_EXHAUSTED) {
  SilentListener silent;
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", ResourceConfig("{\"connect_pool.thread_num\": 1, "
                                                     "\"connect_pool.task_queue_capacity\": 2}")),
            hixl::SUCCESS);
  ASSERT_EQ(e.ConnectAsync(silent.name().c_str(), 600), hixl::SUCCESS);  // runs
  ASSERT_EQ(WaitConnect(e, silent.name(), hixl::AsyncConnectStatus::CONNECTING, 2),
            hixl::AsyncConnectStatus::CONNECTING);  // the one pool thread is in it
  ASSERT_EQ(e.ConnectAsync(silent.name().c_str(), 600), hixl::SUCCESS);  // waits
  ASSERT_EQ(e.ConnectAsync(silent.name().c_str(), 600), hixl::SUCCESS);  // waits
  EXPECT_EQ(e.ConnectAsync(silent.name().c_str(), 600), hixl::RESOURCE_EXHAUSTED);
  EXPECT_EQ(e.DisconnectAsync(silent.name().c_str(), 600), hixl::RESOURCE_EXHAUSTED);
  hixl::AsyncConnectStatus st;
  ASSERT_EQ(e.GetAsyncConnectStatus(silent.name().c_str(), st), hixl::SUCCESS);
  EXPECT_EQ(st, hixl::AsyncConnectStatus::CONNECT_PENDING);  // the latest queued task
  EXPECT_EQ(WaitConnect(e, silent.name(), hixl::AsyncConnectStatus::CONNECT_FAILED, 5),
            hixl::AsyncConnectStatus::CONNECT_FAILED);
  e.Finalize();
}

TEST(ConnectPool, AsyncConnectStatesOfOldRemotesAreForgotten) {
  // A server whose clients come and go for months: the state of every remote
  // it ever async-connected to was kept (and walked by the map query).
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  SilentListener closed(false);  // a port that refuses, on every 127.x address
  auto remote = [&](int i) {
    return "127.0." + std::to_string(1 + i / 250) + "." + std::to_string(1 + i % 250) + ":" +
           std::to_string(closed.port);
  };
  // A disconnected remote is forgotten: it reads NOT_CONNECT, as one never seen.
  ASSERT_EQ(e.DisconnectAsync(remote(0).c_str(), 1000), hixl::SUCCESS);
  std::map<hixl::AscendString, hixl::AsyncConnectStatus> all;
  auto t0 = std::chrono::steady_clock::now();
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(e.GetAsyncConnectStatus(all), hixl::SUCCESS);
  } while (!all.empty() && SecondsSince(t0) < 5);
  EXPECT_TRUE(all.empty());
  // Failed connects to more remotes than are remembered.
  constexpr int kRemotes = 4200;
  for (int i = 0; i < kRemotes && SecondsSince(t0) < 60;) {
    hixl::Status s = e.ConnectAsync(remote(i).c_str(), 1000);
    if (s == hixl::RESOURCE_EXHAUSTED) {  // the pool's queue is full: let it drain
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    ASSERT_EQ(s, hixl::SUCCESS) << remote(i);
    ++i;
  }
  EXPECT_EQ(WaitConnect(e, remote(kRemotes - 1), hixl::AsyncConnectStatus::CONNECT_FAILED, 10),
            hixl::AsyncConnectStatus::CONNECT_FAILED);
  ASSERT_EQ(e.GetAsyncConnectStatus(all), hixl::SUCCESS);
  EXPECT_LE(all.size(), 4096u);
  EXPECT_GE(all.size(), 4000u);
  EXPECT_EQ(all.count(remote(kRemotes - 1).c_str()), 1u) << "the newest remote was forgotten";
  e.Finalize();
}

TEST(ConnectPool, DifferentRemotesRunConcurrentlyOneRemoteInOrder) {
  SilentListener a, b;
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", ResourceConfig("{\"connect_pool.thread_num\": 2}")), hixl::SUCCESS);
  ASSERT_EQ(e.ConnectAsync(a.name().c_str(), 800), hixl::SUCCESS);
  ASSERT_EQ(e.ConnectAsync(b.name().c_str(), 800), hixl::SUCCESS);
  ASSERT_EQ(e.DisconnectAsync(a.name().c_str(), 800), hixl::SUCCESS);
  // b's connect runs on the second pool thread (a's on the first).
  ASSERT_EQ(WaitConnect(e, b.name(), hixl::AsyncConnectStatus::CONNECTING, 2), hixl::AsyncConnectStatus::CONNECTING);
  hixl::AsyncConnectStatus sa, sb;
  e.GetAsyncConnectStatus(a.name().c_str(), sa);
  e.GetAsyncConnectStatus(b.name().c_str(), sb);
  EXPECT_EQ(sa, hixl::AsyncConnectStatus::DISCONNECT_PENDING);  // behind a's connect
  EXPECT_EQ(sb, hixl::AsyncConnectStatus::CONNECTING);          // alongside a's connect
  EXPECT_EQ(WaitConnect(e, a.name(), hixl::AsyncConnectStatus::NOT_CONNECT, 5), hixl::AsyncConnectStatus::NOT_CONNECT);
  e.Finalize();
}

TEST(Heartbeat, TargetDropsAnInitiatorThatFallsSilent) {
  hixl::Hixl server;
  std::string name;
  for (int i = 0; i < 20; ++i) {
    SilentListener probe;
    name = probe.name();
    close(probe.fd);
    probe.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (server.Initialize(name.c_str(), {}) == hixl::SUCCESS) break;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(PortOf(name)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
  hixl::wire::Hello hello;
  hello.initiator = "quiet";
  hello.target = name;
  hello.heartbeat_ms = 100;
  std::vector<uint8_t> body;
  hixl::wire::EncodeHello(hello, &body);
  hixl::wire::FrameHeader h;
  h.type = hixl::wire::MsgType::kHello;
  const std::vector<uint8_t> frame = Frame(h, body);
  ASSERT_EQ(send(fd, frame.data(), frame.size(), 0), static_cast<ssize_t>(frame.size()));
  auto t0 = std::chrono::steady_clock::now();
  // Read the HELLO_ACK, then wait for the target to hang up on us.
  char buf[65536];
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
  }
  EXPECT_EQ(n, 0) << "the target should close the silent stream";
  double secs = SecondsSince(t0);
  EXPECT_GE(secs, 0.25);
  EXPECT_LT(secs, 1.5);
  close(fd);
  server.Finalize();
}

// The TCP connections of a link over tcp: its control stream, and the two
// data streams of tcp.streams_per_link's default.
constexpr int kTcpLinkStreams = 3;

// A channel pool of 4 with waterlines 0.75 / 0.5: the third link triggers
// eviction down to 2. TCP, so that a link is kept busy by freezing its peer.
Options SmallPoolOverTcp() {
  return WithTransport(ResourceConfig("{\"channel_pool.max_channel\": 4, \"channel_pool.high_waterline\": 0.75, "
                                      "\"channel_pool.low_waterline\": 0.5}"),
                       "tcp");
}

TEST(ChannelPool, WaterlinesCloseIdleLinksButNeverABusyOne) {
  // Three server processes: A will be busy, B idle, C is the third link.
  PeerProcess a, b, c;
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  ASSERT_TRUE(c.Start());
  size_t ida = 0, idb = 0, idc = 0;
  uintptr_t ra = a.AllocRegistered(1u << 20, &ida), rb = b.AllocRegistered(1u << 20, &idb),
            rc = c.AllocRegistered(1u << 20, &idc);
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", SmallPoolOverTcp()), hixl::SUCCESS);
  LocalBuffer local(1u << 20);
  hixl::MemDesc md{};
  md.addr = local.addr();
  md.len = local.size();
  hixl::MemHandle mh;
  ASSERT_EQ(e.RegisterMem(md, hixl::MEM_HOST, mh), hixl::SUCCESS);
  ASSERT_EQ(e.Connect(a.name().c_str(), 3000), hixl::SUCCESS);
  ASSERT_EQ(e.Connect(b.name().c_str(), 3000), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> db{{local.addr(), rb, 4096}};
  ASSERT_EQ(e.TransferSync(b.name().c_str(), hixl::WRITE, db, 3000), hixl::SUCCESS);  // B used before A
  // A busy: an async READ stuck on a frozen A.
  a.Kill(SIGSTOP);
  hixl::TransferReq busy = nullptr;
  ASSERT_EQ(e.TransferAsync(a.name().c_str(), hixl::READ, {{local.addr(), ra, 1u << 20}}, hixl::TransferArgs{}, busy),
            hixl::SUCCESS);
  EXPECT_EQ(CountEstablishedTo(PortOf(a.name())), kTcpLinkStreams);
  EXPECT_EQ(CountEstablishedTo(PortOf(b.name())), kTcpLinkStreams);
  ASSERT_EQ(e.Connect(c.name().c_str(), 3000), hixl::SUCCESS);  // third link: high waterline reached
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(CountEstablishedTo(PortOf(a.name())), kTcpLinkStreams) << "the busy link was closed";
  EXPECT_EQ(CountEstablishedTo(PortOf(b.name())), 0) << "the idle link was kept";
  EXPECT_EQ(CountEstablishedTo(PortOf(c.name())), kTcpLinkStreams);
  a.Kill(SIGCONT);
  EXPECT_EQ(WaitFor(e, busy, 10), hixl::TransferStatus::COMPLETED);
  // B reconnects by itself on its next use (AutoConnect is off).
  EXPECT_EQ(e.TransferSync(b.name().c_str(), hixl::WRITE, db, 3000), hixl::SUCCESS);
  EXPECT_EQ(CountEstablishedTo(PortOf(b.name())), kTcpLinkStreams);
  std::vector<hixl::TransferOpDesc> dc{{local.addr(), rc, 4096}};
  EXPECT_EQ(e.TransferSync(c.name().c_str(), hixl::WRITE, dc, 3000), hixl::SUCCESS);
  e.Finalize();
}

TEST(ChannelPool, AHeartbeatAwaitingItsAnswerKeepsNoLinkBusy) {
  // A full pool of one; its link idle but for the heartbeat's PING, which
  // the frozen peer does not answer. A new link must still get in.
  PeerProcess a, b;
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  hixl::Hixl e;
  // PING after 1-1.5 s quiet; the link is dead 4 s after it goes unanswered.
  ASSERT_EQ(e.Initialize("127.0.0.1", WithTransport(ResourceConfig("{\"channel_pool.max_channel\": 1, "
                                                                    "\"heartbeat.interval_ms\": 2000}"),
                                                     "tcp")),
            hixl::SUCCESS);
  ASSERT_EQ(e.Connect(a.name().c_str(), 3000), hixl::SUCCESS);
  a.Kill(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_EQ(e.Connect(b.name().c_str(), 3000), hixl::SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(CountEstablishedTo(PortOf(a.name())), 0) << "the idle link was kept";
  EXPECT_EQ(CountEstablishedTo(PortOf(b.name())), kTcpLinkStreams);
  a.Kill(SIGCONT);
  e.Finalize();
}

TEST(ChannelPool, WaterlinesApplyOnceLinksThatWereBusyGoIdle) {
  // Three links, all busy when the third makes the high mark: none can be
  // closed then. Once they are idle the pool still goes down to the low mark.
  PeerProcess peers[3];
  uintptr_t remote[3];
  size_t id = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(peers[i].Start());
    remote[i] = peers[i].AllocRegistered(1u << 20, &id);
    ASSERT_NE(remote[i], 0u);
  }
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", SmallPoolOverTcp()), hixl::SUCCESS);
  LocalBuffer local(3u << 20);
  RegisterWith(e, local);
  hixl::TransferReq busy[3] = {};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(e.Connect(peers[i].name().c_str(), 3000), hixl::SUCCESS);
    peers[i].Kill(SIGSTOP);  // an async READ stuck on a frozen peer keeps its link busy
    ASSERT_EQ(e.TransferAsync(peers[i].name().c_str(), hixl::READ, {{local.addr() + (i << 20), remote[i], 1u << 20}},
                              hixl::TransferArgs{}, busy[i]),
              hixl::SUCCESS);
  }
  auto links = [&] {
    int n = 0;
    for (auto &p : peers) n += CountEstablishedTo(PortOf(p.name())) > 0;
    return n;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(links(), 3) << "a busy link was closed";
  for (int i = 0; i < 3; ++i) {
    peers[i].Kill(SIGCONT);
    EXPECT_EQ(WaitFor(e, busy[i], 10), hixl::TransferStatus::COMPLETED);
  }
  auto t0 = std::chrono::steady_clock::now();
  while (links() > 2 && SecondsSince(t0) < 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(links(), 2) << "idle links above the high waterline were kept";
  // Each remote is still usable: the closed one reconnects on its next use.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(e.TransferSync(peers[i].name().c_str(), hixl::WRITE, {{local.addr(), remote[i], 4096}}, 3000),
              hixl::SUCCESS);
  }
  e.Finalize();
}

TEST(ChannelPool, ThreadsReconnectingThroughASmallPoolAllSucceed) {
  // Eight remotes through a pool that keeps one link below its high mark of
  // two: every call evicts and reconnects. A link one thread has just opened
  // must not be closed as idle by another thread's connect before the first
  // thread uses it: every call succeeds, every peer being up.
  constexpr int kPeers = 8, kThreads = 4, kCalls = 150;
  PeerProcess peers[kPeers];
  uintptr_t remote[kPeers];
  for (int i = 0; i < kPeers; ++i) {
    ASSERT_TRUE(peers[i].Start());
    size_t id = 0;
    remote[i] = peers[i].AllocRegistered(4096, &id);
    ASSERT_NE(remote[i], 0u);
  }
  hixl::Hixl e;
  Options opts = ResourceConfig("{\"channel_pool.max_channel\": 8, \"channel_pool.high_waterline\": 0.25, "
                                "\"channel_pool.low_waterline\": 0.125}");
  opts[hixl::OPTION_AUTO_CONNECT] = "1";
  ASSERT_EQ(e.Initialize("127.0.0.1", WithTransport(opts, "tcp")), hixl::SUCCESS);
  LocalBuffer local(4096);
  hixl::MemDesc md{};
  md.addr = local.addr();
  md.len = local.size();
  hixl::MemHandle mh;
  ASSERT_EQ(e.RegisterMem(md, hixl::MEM_HOST, mh), hixl::SUCCESS);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kCalls; ++k) {
        const int p = t + (k % 2) * kThreads;
        std::vector<hixl::TransferOpDesc> d{{local.addr() + static_cast<uintptr_t>(t) * 64, remote[p], 64}};
        if (e.TransferSync(peers[p].name().c_str(), hixl::WRITE, d, 3000) != hixl::SUCCESS) ++failed;
      }
    });
  }
  for (auto &th : threads) th.join();
  EXPECT_EQ(failed.load(), 0) << "of " << kThreads * kCalls << " calls";
  e.Finalize();
}

TEST(ConnectPoolFinalize, FinalizeDoesNotWaitOutAConnectInProgress) {
  // A listener that accepts TCP but never answers the handshake: the
  // ConnectAsync task waits for its 8 s timeout, which Finalize must cut.
  SilentListener listener;
  const std::string silent = listener.name();
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  ASSERT_EQ(e.ConnectAsync(silent.c_str(), 8000), hixl::SUCCESS);
  EXPECT_EQ(WaitConnect(e, silent, hixl::AsyncConnectStatus::CONNECTING, 2), hixl::AsyncConnectStatus::CONNECTING);
  // Well into the handshake wait: its HELLO has reached the listener's kernel.
  ASSERT_TRUE(WaitUntil([&] { return BytesDeliveredTo(PortOf(silent)) > 0; }, 2.0));
  auto t0 = std::chrono::steady_clock::now();
  e.Finalize();
  EXPECT_LT(SecondsSince(t0), 1.0);
}

TEST(ListenPort, AClientAddressWithListenPortServes) {
  // local_engine without a port is a client, unless
  // comm_resource_config.listen_port names the port to listen on.
  int port = 0;
  {
    SilentListener probe(/*listening=*/false);
    port = probe.port;
  }  // free again (another process taking it meanwhile is possible, and unlikely)
  hixl::Hixl server, client;
  ASSERT_EQ(server.Initialize("127.0.0.1",
                              ResourceConfig("{\"comm_resource_config.listen_port\": " + std::to_string(port) + "}")),
            hixl::SUCCESS);
  ASSERT_EQ(client.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  EXPECT_EQ(client.Connect(("127.0.0.1:" + std::to_string(port)).c_str(), 3000), hixl::SUCCESS);
  client.Finalize();
  server.Finalize();
}

}  // namespace
}  // namespace hixl_test
