// completion.h: the outcome of one transfer (or notify) that is carried out
// in several parts, possibly on several streams and threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "common/deadline.h"
#include "common/mutex.h"
#include "hixl/hixl_types.h"

namespace hixl {

// The outcome of a part that the peer refused before moving any of its
// bytes (a frame naming memory the target no longer has registered).
// Internal, never returned to users: a completion whose parts were all
// refused ends PARAM_INVALID (nothing moved, as that code promises); one
// where other parts moved bytes ends FAILED.
constexpr Status kRefused = 0x7F000001u;

class Completion {
 public:
  Completion() = default;
  Completion(const Completion &) = delete;
  Completion &operator=(const Completion &) = delete;

  // Before the parts are submitted.
  void AddParts(size_t n) { pending_.fetch_add(n); }
  // A part finished. The first failure is kept; the waiter wakes on it at
  // once (it then cancels the other parts) or when the last part is done.
  // kRefused is no such failure: the other parts go on, and the outcome is
  // known when the last one is done.
  void PartDone(Status s) EXCLUDES(mu_);
  // A part that stood for no work finished (the guard that keeps a batch
  // open while its parts are added): it neither moved bytes nor failed.
  void PartSkipped() EXCLUDES(mu_);
  // Waits until every part is done, one failed, or `deadline`. Returns
  // SUCCESS, the first failure, or TIMEOUT.
  Status Wait(Deadline deadline) EXCLUDES(mu_);
  // Non-blocking: true once finished (all done or a failure), with `*s`.
  bool Poll(Status *s) EXCLUDES(mu_);
  // Marks the completion finished with `s` unless it already is.
  // The callback (see SetOnFinish) runs on the calling thread, without
  // the lock: it may take other locks, or this completion's again.
  void Finish(Status s) EXCLUDES(mu_);
  // Called once when the completion finishes (from the finishing thread).
  void SetOnFinish(std::function<void()> fn) EXCLUDES(mu_);
  // True while finishing would run such a callback: a transport whose
  // completing thread must not run engine code hands those parts over.
  bool HasOnFinish() EXCLUDES(mu_);

 private:
  // Called by the part that was last: the outcome when no part failed.
  void LastPartDone() EXCLUDES(mu_);

  // The part counts, without the lock: each part adds or takes one, and
  // the one that takes the last finishes the completion (under mu_).
  std::atomic<size_t> pending_{0};
  std::atomic<bool> moved_{false};    // some part succeeded
  std::atomic<bool> refused_{false};  // some part was refused
  // Guards the outcome, for waiters (cv_) and pollers on other threads.
  Mutex mu_;
  CondVar cv_;
  bool finished_ GUARDED_BY(mu_) = false;
  Status status_ GUARDED_BY(mu_) = SUCCESS;
  std::function<void()> on_finish_ GUARDED_BY(mu_);
};

}  // namespace hixl
