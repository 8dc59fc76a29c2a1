// Unit tests for hixl::ConnectPool (src/engine/connect_pool.h): per-key
// ordering, concurrency across keys, the waiting-task cap, Stop, and lazy
// thread start. Every wait is bounded; nothing sleeps longer than 200 ms.
#include "engine/connect_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace hixl {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A one-shot event with a timed wait.
class Event {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return set_; });
  }
  bool IsSet() {
    std::lock_guard<std::mutex> lock(mu_);
    return set_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Polls `pred` every millisecond for at most `ms` milliseconds.
template <typename Pred>
bool WaitUntil(Pred pred, int ms) {
  auto until = Clock::now() + milliseconds(ms);
  while (!pred()) {
    if (Clock::now() >= until) return pred();
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

size_t ThreadCount() {
  size_t n = 0;
  for (const auto &e : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)e;
    ++n;
  }
  return n;
}

constexpr milliseconds kLong(2000);  // a failure bound, never reached when all is well

TEST(ConnectPoolTest, RunsASubmittedTask) {
  ConnectPool pool(2, 8);
  Event ran;
  ASSERT_TRUE(pool.Submit("a", [&] { ran.Set(); }));
  EXPECT_TRUE(ran.WaitFor(kLong));
}

TEST(ConnectPoolTest, OneKeyRunsInOrderAndNeverConcurrently) {
  ConnectPool pool(4, 1000);
  constexpr int kTasks = 200;
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_TRUE(pool.Submit("k", [&, i] {
      int now = ++in_flight;
      int seen = max_in_flight.load();
      while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(i);
      }
      std::this_thread::yield();
      --in_flight;
      ++finished;
    }));
    // Other keys in between keep the other threads busy.
    ASSERT_TRUE(pool.Submit("other" + std::to_string(i % 3), [] { std::this_thread::yield(); }));
  }
  ASSERT_TRUE(WaitUntil([&] { return finished.load() == kTasks; }, 5000));
  EXPECT_EQ(max_in_flight.load(), 1);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(order.size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(order[i], i);
}

TEST(ConnectPoolTest, OneKeyWaitsForTheRunningTaskEvenWithIdleThreads) {
  ConnectPool pool(4, 16);
  Event first_started, release_first, second_ran;
  ASSERT_TRUE(pool.Submit("k", [&] {
    first_started.Set();
    release_first.WaitFor(kLong);
  }));
  ASSERT_TRUE(first_started.WaitFor(kLong));
  ASSERT_TRUE(pool.Submit("k", [&] { second_ran.Set(); }));
  // Three threads are idle, but the second task of "k" must wait.
  EXPECT_FALSE(second_ran.WaitFor(milliseconds(100)));
  release_first.Set();
  EXPECT_TRUE(second_ran.WaitFor(kLong));
}

TEST(ConnectPoolTest, DifferentKeysRunConcurrently) {
  ConnectPool pool(2, 16);
  Event a_started, b_started;
  std::atomic<bool> a_saw_b{false}, b_saw_a{false};
  std::atomic<int> finished{0};
  ASSERT_TRUE(pool.Submit("a", [&] {
    a_started.Set();
    a_saw_b = b_started.WaitFor(kLong);
    ++finished;
  }));
  ASSERT_TRUE(pool.Submit("b", [&] {
    b_started.Set();
    b_saw_a = a_started.WaitFor(kLong);
    ++finished;
  }));
  ASSERT_TRUE(WaitUntil([&] { return finished.load() == 2; }, 5000));
  EXPECT_TRUE(a_saw_b.load()) << "task b did not start while task a was running";
  EXPECT_TRUE(b_saw_a.load());
}

TEST(ConnectPoolTest, KeysBeyondTheThreadCountQueue) {
  // One thread: a second key waits for the first task even though it is
  // another key.
  ConnectPool pool(1, 16);
  Event a_started, release_a, b_ran;
  ASSERT_TRUE(pool.Submit("a", [&] {
    a_started.Set();
    release_a.WaitFor(kLong);
  }));
  ASSERT_TRUE(a_started.WaitFor(kLong));
  ASSERT_TRUE(pool.Submit("b", [&] { b_ran.Set(); }));
  EXPECT_FALSE(b_ran.WaitFor(milliseconds(100)));
  release_a.Set();
  EXPECT_TRUE(b_ran.WaitFor(kLong));
}

TEST(ConnectPoolTest, SubmitRefusesWhenCapacityTasksWait) {
  ConnectPool pool(1, 3);
  Event started, release;
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.Submit("a", [&] {
    started.Set();
    release.WaitFor(kLong);
    ++ran;
  }));
  ASSERT_TRUE(started.WaitFor(kLong));  // running: no longer waiting
  // Three wait (across keys), the fourth is refused.
  EXPECT_TRUE(pool.Submit("a", [&] { ++ran; }));
  EXPECT_TRUE(pool.Submit("b", [&] { ++ran; }));
  EXPECT_TRUE(pool.Submit("c", [&] { ++ran; }));
  EXPECT_FALSE(pool.Submit("d", [&] { ran += 100; }));
  EXPECT_FALSE(pool.Submit("a", [&] { ran += 100; }));
  release.Set();
  ASSERT_TRUE(WaitUntil([&] { return ran.load() >= 4; }, 5000));
  // Room again once they have started.
  Event later;
  ASSERT_TRUE(WaitUntil([&] { return pool.Submit("e", [&] { later.Set(); }); }, 2000));
  EXPECT_TRUE(later.WaitFor(kLong));
  EXPECT_EQ(ran.load(), 4);  // the refused tasks never ran
}

TEST(ConnectPoolTest, ZeroCapacityRefusesEverything) {
  ConnectPool pool(1, 0);
  EXPECT_FALSE(pool.Submit("a", [] {}));
}

TEST(ConnectPoolTest, StopDropsWaitingTasksAndWaitsForRunningOnes) {
  auto pool = std::make_unique<ConnectPool>(1, 16);
  Event started, release;
  std::atomic<bool> running_done{false};
  std::atomic<int> dropped_ran{0};
  ASSERT_TRUE(pool->Submit("a", [&] {
    started.Set();
    release.WaitFor(kLong);
    running_done = true;
  }));
  ASSERT_TRUE(started.WaitFor(kLong));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(pool->Submit(i % 2 == 0 ? "a" : "b", [&] { ++dropped_ran; }));
  }

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    pool->Stop();
    stopped = true;
  });
  // Stop waits for the running task.
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(stopped.load()) << "Stop returned while a task was running";
  EXPECT_FALSE(pool->Submit("c", [&] { ++dropped_ran; })) << "Submit accepted while stopping";
  release.Set();
  EXPECT_TRUE(WaitUntil([&] { return stopped.load(); }, 2000));
  stopper.join();
  EXPECT_TRUE(running_done.load());
  // Submit after Stop is refused; nothing dropped ever runs.
  EXPECT_FALSE(pool->Submit("a", [&] { ++dropped_ran; }));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(dropped_ran.load(), 0);
  pool.reset();  // the destructor stops again: harmless
  EXPECT_EQ(dropped_ran.load(), 0);
}

TEST(ConnectPoolTest, StopWithoutTasksAndTwice) {
  ConnectPool pool(3, 4);
  pool.Stop();
  pool.Stop();
  EXPECT_FALSE(pool.Submit("a", [] {}));
}

TEST(ConnectPoolTest, ThreadsStartLazily) {
  // Under TSan the first thread a process creates also starts the
  // sanitizer's own background thread: create one first, so that only the
  // pool's threads are counted.
  std::thread([] {}).join();
  const size_t before = ThreadCount();
  {
    ConnectPool pool(3, 4);
    EXPECT_EQ(ThreadCount(), before) << "threads started before any task";
    Event ran;
    ASSERT_TRUE(pool.Submit("a", [&] { ran.Set(); }));
    ASSERT_TRUE(ran.WaitFor(kLong));
    EXPECT_EQ(ThreadCount(), before + 3);
    // More tasks start no more threads.
    Event ran2;
    ASSERT_TRUE(pool.Submit("b", [&] { ran2.Set(); }));
    ASSERT_TRUE(ran2.WaitFor(kLong));
    EXPECT_EQ(ThreadCount(), before + 3);
  }
  // The destructor joined them (the kernel may take a moment to reap).
  EXPECT_TRUE(WaitUntil([&] { return ThreadCount() == before; }, 500));
}

TEST(ConnectPoolTest, DestructorStopsARunningPool) {
  std::atomic<int> ran{0};
  Event started, release;
  std::thread releaser;
  {
    ConnectPool pool(2, 16);
    ASSERT_TRUE(pool.Submit("a", [&] {
      started.Set();
      release.WaitFor(kLong);
      ++ran;
    }));
    ASSERT_TRUE(started.WaitFor(kLong));
    ASSERT_TRUE(pool.Submit("a", [&] { ran += 100; }));  // waits behind the first: dropped
    releaser = std::thread([&] {
      std::this_thread::sleep_for(milliseconds(50));
      release.Set();
    });
  }
  releaser.join();
  EXPECT_EQ(ran.load(), 1);
}

TEST(ConnectPoolTest, TasksMaySubmitFollowUps) {
  ConnectPool pool(2, 16);
  Event done;
  std::atomic<int> step{0};
  ASSERT_TRUE(pool.Submit("a", [&] {
    step = 1;
    // Same key: queued behind this task, runs after it returns.
    EXPECT_TRUE(pool.Submit("a", [&] {
      EXPECT_EQ(step.load(), 2);
      step = 3;
      done.Set();
    }));
    step = 2;
  }));
  ASSERT_TRUE(done.WaitFor(kLong));
  EXPECT_EQ(step.load(), 3);
}

}  // namespace
}  // namespace hixl
