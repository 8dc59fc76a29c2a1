// child.h: what the target and initiator processes of hixl_soak share: the
// line protocol with the orchestrator (commands on stdin, answers and
// reports on stdout), the deadline check, and the gate that pauses work.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>

#include "soak/freezes.h"

namespace soak {

using Clock = std::chrono::steady_clock;

inline long long MsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// One line to the orchestrator: "READY", "PAUSED", "STAT k=v ...",
// "FAIL what" (an invariant broken; the run fails).
inline void Say(const std::string &line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

// This process's freeze count (freezes.h), mapped at its start: a call of
// ours that a freeze of our own stretched is not held to its deadline.
inline uint64_t *g_freezes = nullptr;
inline uint64_t Freezes() { return g_freezes != nullptr ? LoadCount(g_freezes) : 0; }

// When a call began.
struct CallStart {
  Clock::time_point at = Clock::now();
  uint64_t freezes = Freezes();
};

// "No call beyond its deadline plus one second": every call is timed
// against its limit (its timeout, or the bound docs/API.md gives one
// without a timeout).
class Deadlines {
 public:
  static constexpr long long kGraceMs = 1000;
  // Times the call; reports it if it took longer than limit + grace.
  void Check(const char *call, const CallStart &start, long long limit_ms) {
    if (Freezes() != start.freezes) {
      ++excused_;  // we were frozen meanwhile
      return;
    }
    long long took = MsSince(start.at);
    long long over = took - limit_ms;
    long long seen = max_over_ms_.load();
    while (over > seen && !max_over_ms_.compare_exchange_weak(seen, over)) {
    }
    ++calls_;
    if (over > kGraceMs / 4) {  // in the child's log: which calls come near the limit
      std::fprintf(stderr, "soak: %s took %lld ms, limit %lld ms\n", call, took, limit_ms);
    }
    if (over > kGraceMs) {
      ++broken_;
      Say("FAIL deadline: " + std::string(call) + " took " + std::to_string(took) + " ms, limit " +
          std::to_string(limit_ms) + " ms + " + std::to_string(kGraceMs) + " ms");
    }
  }
  std::string Stat() const {
    return "calls=" + std::to_string(calls_.load()) + " over_deadline=" + std::to_string(broken_.load()) +
           " frozen_calls=" + std::to_string(excused_.load()) + " max_over_ms=" + std::to_string(max_over_ms_.load());
  }

 private:
  std::atomic<long long> max_over_ms_{-1000000};
  std::atomic<long long> calls_{0};
  std::atomic<long long> broken_{0};
  std::atomic<long long> excused_{0};
};

// Lets the orchestrator stop all work at a checkpoint: workers Enter before
// each step and Leave after it; Pause returns once none is inside.
class Gate {
 public:
  bool Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !paused_ || stop_; });
    if (stop_) return false;
    ++inside_;
    return true;
  }
  void Leave() {
    std::lock_guard<std::mutex> lock(mu_);
    --inside_;
    cv_.notify_all();
  }
  bool Pause(int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    paused_ = true;
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return inside_ == 0; });
  }
  void Resume() {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = false;
    cv_.notify_all();
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  bool stopped() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }
  // Sleeps up to `ms`, less if stopped or paused meanwhile.
  void Nap(int ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stop_ || paused_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool paused_ = false;  // guarded by mu_
  bool stop_ = false;    // guarded by mu_
  int inside_ = 0;       // guarded by mu_
};

}  // namespace soak
