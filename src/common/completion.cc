#include "common/completion.h"

namespace hixl {

void Completion::PartDone(Status s) {
  if (s == SUCCESS) {
    moved_.store(true, std::memory_order_relaxed);  // published by the fetch_sub below
  } else if (s == kRefused) {
    refused_.store(true, std::memory_order_relaxed);
  } else {
    // Finished before counted: once counted, the last other part may find
    // none pending and finish it SUCCESS first, and this failure be lost.
    Finish(s);
    pending_.fetch_sub(1);
    return;
  }
  if (pending_.fetch_sub(1) == 1) LastPartDone();
}

void Completion::PartSkipped() {
  if (pending_.fetch_sub(1) == 1) LastPartDone();
}

void Completion::LastPartDone() {
  Status s = SUCCESS;
  if (refused_.load(std::memory_order_relaxed)) s = moved_.load(std::memory_order_relaxed) ? FAILED : PARAM_INVALID;
  Finish(s);
}

void Completion::Finish(Status s) {
  std::function<void()> fn;
  {
    MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    status_ = s;
    cv_.NotifyAll();
    fn = std::move(on_finish_);
  }
  if (fn) fn();
}

Status Completion::Wait(Deadline deadline) {
  UniqueLock lock(&mu_);
  if (!cv_.WaitUntil(lock, deadline.at(), [this]() REQUIRES(mu_) { return finished_; })) return TIMEOUT;
  return status_;
}

bool Completion::Poll(Status *s) {
  MutexLock lock(&mu_);
  if (finished_) *s = status_;
  return finished_;
}

bool Completion::HasOnFinish() {
  MutexLock lock(&mu_);
  return static_cast<bool>(on_finish_);
}

void Completion::SetOnFinish(std::function<void()> fn) {
  {
    MutexLock lock(&mu_);
    if (!finished_) {
      on_finish_ = std::move(fn);
      return;
    }
  }
  if (fn) fn();
}

}  // namespace hixl
