// completion.h: the outcome of one transfer (or notify) that is carried out
// in several parts, possibly on several streams and threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "common/deadline.h"
#include "hixl/hixl_types.h"

namespace hixl {

class Completion {
 public:
  Completion() = default;
  Completion(const Completion &) = delete;
  Completion &operator=(const Completion &) = delete;

  // Before the parts are submitted.
  void AddParts(size_t n) { pending_.fetch_add(n); }
  // A part finished. The first failure is kept; the waiter wakes on it at
  // once (it then cancels the other parts) or when the last part is done.
  void PartDone(Status s);
  // Waits until every part is done, one failed, or `deadline`. Returns
  // SUCCESS, the first failure, or TIMEOUT.
  Status Wait(Deadline deadline);
  // Non-blocking: true once finished (all done or a failure), with `*s`.
  bool Poll(Status *s);
  // Marks the completion finished with `s` unless it already is.
  void Finish(Status s);
  // Called once when the completion finishes (from the finishing thread).
  void SetOnFinish(std::function<void()> fn);

 private:
  void FinishLocked(Status s, std::unique_lock<std::mutex> &lock);

  std::atomic<size_t> pending_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  Status status_ = SUCCESS;
  std::function<void()> on_finish_;
};

}  // namespace hixl
