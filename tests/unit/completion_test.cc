// Unit tests for hixl::Completion (src/common/completion.h).
#include "common/completion.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace hixl {
namespace {

using std::chrono::milliseconds;

TEST(CompletionTest, AllPartsSucceed) {
  Completion c;
  c.AddParts(3);
  Status s = 12345;
  c.PartDone(SUCCESS);
  c.PartDone(SUCCESS);
  EXPECT_FALSE(c.Poll(&s));
  EXPECT_EQ(s, 12345u);  // untouched while not finished
  c.PartDone(SUCCESS);
  ASSERT_TRUE(c.Poll(&s));
  EXPECT_EQ(s, SUCCESS);
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(1000)), SUCCESS);
}

TEST(CompletionTest, PartsFromManyThreads) {
  Completion c;
  constexpr int kThreads = 8, kPerThread = 500;
  c.AddParts(kThreads * kPerThread);
  std::atomic<int> finished_calls{0};
  c.SetOnFinish([&] { finished_calls.fetch_add(1); });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) c.PartDone(SUCCESS);
    });
  }
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(10000)), SUCCESS);
  for (auto &t : threads) t.join();
  EXPECT_EQ(finished_calls.load(), 1);
}

TEST(CompletionTest, WaitWakesOnSuccessFromAnotherThread) {
  Completion c;
  c.AddParts(2);
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(20));
    c.PartDone(SUCCESS);
    std::this_thread::sleep_for(milliseconds(20));
    c.PartDone(SUCCESS);
  });
  auto t0 = Clock::now();
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(10000)), SUCCESS);
  EXPECT_GE(Clock::now() - t0, milliseconds(35));
  t.join();
}

TEST(CompletionTest, FirstFailureWakesWaiterAtOnce) {
  Completion c;
  c.AddParts(3);
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(50));
    c.PartDone(FAILED);
  });
  auto t0 = Clock::now();
  // Two parts never finish, yet the waiter wakes with the failure, long
  // before its deadline.
  Status s = c.Wait(Deadline::AfterMillis(10000));
  auto waited = Clock::now() - t0;
  t.join();
  EXPECT_EQ(s, FAILED);
  EXPECT_LT(waited, std::chrono::seconds(5));
  Status polled = SUCCESS;
  ASSERT_TRUE(c.Poll(&polled));
  EXPECT_EQ(polled, FAILED);

  // Later parts, failed or not, change nothing.
  c.PartDone(TIMEOUT);
  c.PartDone(SUCCESS);
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(0)), FAILED);
}

TEST(CompletionTest, FailureOfTheLastPartIsKept) {
  Completion c;
  c.AddParts(2);
  c.PartDone(SUCCESS);
  c.PartDone(NOT_CONNECTED);
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(1000)), NOT_CONNECTED);
}

TEST(CompletionTest, FirstOfSeveralFailuresWins) {
  Completion c;
  c.AddParts(3);
  c.PartDone(TIMEOUT);
  c.PartDone(FAILED);
  c.PartDone(PARAM_INVALID);
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(1000)), TIMEOUT);
}

TEST(CompletionTest, PastDeadlineTimesOut) {
  Completion c;
  c.AddParts(1);
  auto t0 = Clock::now();
  EXPECT_EQ(c.Wait(Deadline(Clock::now() - std::chrono::seconds(1))), TIMEOUT);
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(0)), TIMEOUT);
  EXPECT_LT(Clock::now() - t0, milliseconds(500));
  Status s = SUCCESS;
  EXPECT_FALSE(c.Poll(&s));
  // A timed-out wait does not finish the completion: the part can still end it.
  c.PartDone(SUCCESS);
  EXPECT_EQ(c.Wait(Deadline(Clock::now() - std::chrono::seconds(1))), SUCCESS);
}

TEST(CompletionTest, ShortDeadlineTimesOut) {
  Completion c;
  c.AddParts(1);
  auto t0 = Clock::now();
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(50)), TIMEOUT);
  auto waited = Clock::now() - t0;
  EXPECT_GE(waited, milliseconds(50));
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST(CompletionTest, FinishAfterFinishedIsNoOp) {
  Completion c;
  c.AddParts(2);
  c.Finish(TIMEOUT);
  Status s = SUCCESS;
  ASSERT_TRUE(c.Poll(&s));
  EXPECT_EQ(s, TIMEOUT);
  c.Finish(SUCCESS);
  c.Finish(FAILED);
  c.PartDone(SUCCESS);
  c.PartDone(FAILED);
  ASSERT_TRUE(c.Poll(&s));
  EXPECT_EQ(s, TIMEOUT);
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(100)), TIMEOUT);
}

TEST(CompletionTest, FinishWakesWaiterWithPartsPending) {
  Completion c;
  c.AddParts(5);
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(30));
    c.Finish(FAILED);
  });
  EXPECT_EQ(c.Wait(Deadline::AfterMillis(10000)), FAILED);
  t.join();
}

TEST(CompletionTest, OnFinishSetBeforeRunsOnce) {
  Completion c;
  c.AddParts(2);
  int calls = 0;
  c.SetOnFinish([&] { ++calls; });
  c.PartDone(SUCCESS);
  EXPECT_EQ(calls, 0);
  c.PartDone(SUCCESS);
  EXPECT_EQ(calls, 1);
  c.Finish(FAILED);
  c.PartDone(SUCCESS);
  EXPECT_EQ(calls, 1);
}

TEST(CompletionTest, OnFinishSetBeforeRunsOnceOnFailure) {
  Completion c;
  c.AddParts(3);
  int calls = 0;
  c.SetOnFinish([&] { ++calls; });
  c.PartDone(FAILED);
  EXPECT_EQ(calls, 1);
  c.PartDone(FAILED);
  c.PartDone(SUCCESS);
  c.Finish(TIMEOUT);
  EXPECT_EQ(calls, 1);
}

TEST(CompletionTest, OnFinishSetAfterRunsAtOnceAndOnce) {
  Completion c;
  c.Finish(SUCCESS);
  int calls = 0;
  c.SetOnFinish([&] { ++calls; });
  EXPECT_EQ(calls, 1);
  c.Finish(FAILED);
  c.PartDone(SUCCESS);
  EXPECT_EQ(calls, 1);
}

TEST(CompletionTest, OnFinishRunsOnFinishingThreadWithoutTheLock) {
  Completion c;
  c.AddParts(1);
  std::thread::id ran_on;
  bool polled = false;
  Status seen = 0;
  c.SetOnFinish([&] {
    ran_on = std::this_thread::get_id();
    // The callback may look at the completion: it runs without the lock held.
    polled = c.Poll(&seen);
  });
  std::thread::id finisher;
  std::thread t([&] {
    finisher = std::this_thread::get_id();
    c.PartDone(NOTIFY_FAILED);
  });
  t.join();
  EXPECT_EQ(ran_on, finisher);
  EXPECT_TRUE(polled);
  EXPECT_EQ(seen, NOTIFY_FAILED);
}

TEST(CompletionTest, ConcurrentFailuresFinishOnce) {
  for (int round = 0; round < 20; ++round) {
    Completion c;
    c.AddParts(8);
    std::atomic<int> calls{0};
    c.SetOnFinish([&] { calls.fetch_add(1); });
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) threads.emplace_back([&c, t] { c.PartDone(t % 2 == 0 ? FAILED : SUCCESS); });
    for (auto &t : threads) t.join();
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(c.Wait(Deadline::AfterMillis(0)), FAILED);
  }
}

// A failure racing the last other part: the failure is the outcome, never
// the SUCCESS that the other part's finishing gives. (Once, under TSan, a
// cuda_ipc WRITE whose copy had failed ended SUCCESS: the failing part
// counted itself done before finishing the completion, and the caller's
// guard part, the last, finished it first.) Two threads meet at each round
// so that the two calls overlap.
TEST(CompletionTest, AFailureRacingTheLastOtherPartIsTheOutcome) {
#ifdef __SANITIZE_THREAD__
  constexpr int kRounds = 5000;  // each meeting spins, and TSan slows atomics 10x and more
#else
  constexpr int kRounds = 20000;  // 7-22 of them ended SUCCESS before the fix
#endif
  std::vector<std::unique_ptr<Completion>> cs;
  for (int i = 0; i < kRounds; ++i) {
    cs.push_back(std::make_unique<Completion>());
    cs.back()->AddParts(2);
  }
  std::atomic<int> ready{0};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto meet = [&](int round) {  // both threads at `round` (bounded wait)
    ready.fetch_add(1);
    while (ready.load() < 2 * (round + 1) && std::chrono::steady_clock::now() < give_up) {
    }
  };
  std::thread failing([&] {
    for (int i = 0; i < kRounds; ++i) {
      meet(i);
      cs[i]->PartDone(FAILED);
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    meet(i);
    if (i % 2 == 0) {
      cs[i]->PartSkipped();
    } else {
      cs[i]->PartDone(SUCCESS);
    }
  }
  failing.join();
  ASSERT_LT(std::chrono::steady_clock::now(), give_up);
  int wrong = 0;
  for (auto &c : cs) {
    Status s = SUCCESS;
    ASSERT_TRUE(c->Poll(&s));
    wrong += s != FAILED;
  }
  EXPECT_EQ(wrong, 0) << "of " << kRounds << " rounds";
}

TEST(CompletionTest, RefusedPartsAloneArePARAM_INVALID) {
  // Refused by the peer, nothing moved: the batch is PARAM_INVALID, and only
  // once every part is in (a refusal is not a failure that ends it early).
  Completion c;
  c.AddParts(3);
  c.PartDone(kRefused);
  Status s = SUCCESS;
  EXPECT_FALSE(c.Poll(&s));
  c.PartSkipped();  // a guard moves nothing either
  c.PartDone(kRefused);
  ASSERT_TRUE(c.Poll(&s));
  EXPECT_EQ(s, PARAM_INVALID);
}

TEST(CompletionTest, RefusedBesideAMovedPartIsFAILED) {
  for (bool refused_first : {true, false}) {
    Completion c;
    c.AddParts(2);
    c.PartDone(refused_first ? kRefused : SUCCESS);
    c.PartDone(refused_first ? SUCCESS : kRefused);
    Status s = SUCCESS;
    ASSERT_TRUE(c.Poll(&s));
    EXPECT_EQ(s, FAILED) << refused_first;
  }
}

TEST(CompletionTest, AFailureStillEndsARefusedBatchAtOnce) {
  Completion c;
  c.AddParts(3);
  c.PartDone(kRefused);
  c.PartDone(TIMEOUT);
  Status s = SUCCESS;
  ASSERT_TRUE(c.Poll(&s));
  EXPECT_EQ(s, TIMEOUT);
}

TEST(CompletionTest, SkippedPartsAloneAreSUCCESS) {
  Completion c;
  c.AddParts(2);
  c.PartSkipped();
  c.PartDone(SUCCESS);
  Status s = FAILED;
  ASSERT_TRUE(c.Poll(&s));
  EXPECT_EQ(s, SUCCESS);
}

}  // namespace
}  // namespace hixl
