// io_worker_test.cc: IoWorker's posted and timed tasks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/tcp/io_worker.h"

namespace hixl::tcp {
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

}  // namespace
}  // namespace hixl::tcp
