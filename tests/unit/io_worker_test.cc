// io_worker_test.cc: IoWorker's posted and timed tasks, and the pollables it
// owns.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "common/io_worker.h"

namespace hixl {
namespace {

using Clock = std::chrono::steady_clock;

// Waits (bounded) until `pred` holds.
template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto until = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(IoWorkerTest, TimedTasksRunOnTheWorkerNotBeforeTheirTimeAndInTimeOrder) {
  IoWorker w("test worker");
  ASSERT_TRUE(w.Start());
  std::mutex mu;
  std::vector<int> order;
  std::vector<Clock::duration> late;
  std::atomic<bool> on_worker{true};
  auto t0 = Clock::now();
  // Posted out of order; the 100 ms idle tick must not delay them.
  for (int ms : {30, 10, 20}) {
    auto when = t0 + std::chrono::milliseconds(ms);
    w.PostAt(when, [&, ms, when] {
      if (!w.OnWorkerThread()) on_worker = false;
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(ms);
      late.push_back(Clock::now() - when);
    });
  }
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return order.size() == 3;
  }));
  EXPECT_TRUE(on_worker);
  EXPECT_EQ(order, (std::vector<int>{10, 20, 30}));
  for (auto d : late) {
    EXPECT_GE(d.count(), 0) << "ran early";
    EXPECT_LT(d, std::chrono::milliseconds(80)) << "ran far too late";
  }
  w.Stop();
}

TEST(IoWorkerTest, TimedTaskPostedFromItsOwnTaskRuns) {
  IoWorker w("test worker");
  ASSERT_TRUE(w.Start());
  std::atomic<int> runs{0};
  std::function<void()> again = [&] {
    if (++runs < 3) w.PostAt(Clock::now() + std::chrono::milliseconds(5), again);
  };
  w.PostAt(Clock::now(), again);
  EXPECT_TRUE(WaitUntil([&] { return runs.load() == 3; }, std::chrono::milliseconds(2000)));
  w.Stop();
}

TEST(IoWorkerTest, TimedTasksAfterStopAreDropped) {
  IoWorker w("test worker");
  ASSERT_TRUE(w.Start());
  w.Stop();
  std::atomic<bool> ran{false};
  w.PostAt(Clock::now(), [&] { ran = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(ran);
}

TEST(IoWorkerTest, PostSaysWhetherTheTaskWillRun) {
  // A caller whose task is dropped (the worker stopped: the engine is
  // finalizing) must hear of it, or what the task stood for (a share of an
  // shm copy) would never finish.
  IoWorker w("test worker");
  ASSERT_TRUE(w.Start());
  std::atomic<bool> ran{false};
  EXPECT_TRUE(w.Post([&] { ran = true; }));
  for (int i = 0; i < 200 && !ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(ran);
  w.Stop();
  ran = false;
  EXPECT_FALSE(w.Post([&] { ran = true; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(ran);
}

// Closes its fd and leaves the worker on its first event, as a stream whose
// peer hung up at once does.
class SelfClosing : public Pollable {
 public:
  SelfClosing(int fd, IoWorker *w, std::atomic<int> *shut) : fd_(fd), w_(w), shut_(shut) {}
  int fd() const override { return fd_; }
  void OnEvents(uint32_t) override {
    if (fd_ < 0) return;
    w_->Remove(this);
    close(fd_);
    fd_ = -1;
  }
  void OnShutdown() override {
    ++*shut_;
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  IoWorker *w_;
  std::atomic<int> *shut_;
};

TEST(IoWorkerTest, APollableThatLeavesOnItsFirstEventIsNotKeptByTheWorker) {
  // Add registers the fd and hands ownership to the worker thread; a Remove
  // from a first event that comes in between must still find it owned.
  IoWorker w("test worker");
  ASSERT_TRUE(w.Start());
  std::atomic<int> shut{0};
  constexpr int kN = 5000;
  for (int i = 0; i < kN; ++i) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    close(sv[1]);  // sv[0] is readable (EOF) at once
    w.Add(std::make_shared<SelfClosing>(sv[0], &w, &shut), EPOLLIN);
  }
  EXPECT_TRUE(WaitUntil([&] { return w.load() == 0; })) << w.load() << " of " << kN << " still owned";
  w.Stop();
  EXPECT_EQ(shut.load(), 0);  // none was left for Stop to shut down
}

}  // namespace
}  // namespace hixl
