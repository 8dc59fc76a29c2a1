// deadline.h: a point in steady time that every blocking step honours.
#pragma once

#include <chrono>
#include <cstdint>

namespace hixl {

using Clock = std::chrono::steady_clock;

// Steady-clock milliseconds, for coarse "when last" stamps.
inline int64_t SteadyMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

class Deadline {
 public:
  static Deadline AfterMillis(int64_t ms, Clock::time_point from = Clock::now()) {
    return Deadline(from + std::chrono::milliseconds(ms));
  }
  // A century after the steady clock's start (boot): far enough to never
  // matter, near enough that condition-variable waits do not overflow
  // converting it, and no clock read for a default that is often replaced.
  static Deadline Never() { return Deadline(Clock::time_point(std::chrono::hours(24 * 365 * 100))); }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  Clock::time_point at() const { return at_; }
  bool Expired() const { return Clock::now() >= at_; }
  // Milliseconds left, rounded up, clamped to [0, INT32_MAX]: suits poll().
  int RemainingMillis() const {
    auto left = at_ - Clock::now();
    if (left <= Clock::duration::zero()) return 0;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left + std::chrono::microseconds(999)).count();
    return ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
  }
  Deadline Earlier(Deadline other) const { return other.at_ < at_ ? other : *this; }

 private:
  Clock::time_point at_;
};

}  // namespace hixl
