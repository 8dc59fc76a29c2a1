#include "common/completion.h"

namespace hixl {

void Completion::PartDone(Status s) {
  if (s == SUCCESS) {
    moved_.store(true, std::memory_order_relaxed);  // published by the fetch_sub below
  } else if (s == kRefused) {
    refused_.store(true, std::memory_order_relaxed);
  } else {
    pending_.fetch_sub(1);
    std::unique_lock<std::mutex> lock(mu_);
    if (!finished_) FinishLocked(s, lock);
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
  std::unique_lock<std::mutex> lock(mu_);
  if (!finished_) FinishLocked(s, lock);
}

void Completion::Finish(Status s) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!finished_) FinishLocked(s, lock);
}

void Completion::FinishLocked(Status s, std::unique_lock<std::mutex> &lock) {
  finished_ = true;
  status_ = s;
  cv_.notify_all();
  std::function<void()> fn = std::move(on_finish_);
  lock.unlock();
  if (fn) fn();
}

Status Completion::Wait(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline.at(), [this] { return finished_; })) return TIMEOUT;
  return status_;
}

bool Completion::Poll(Status *s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) *s = status_;
  return finished_;
}

void Completion::SetOnFinish(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  if (finished_) {
    lock.unlock();
    if (fn) fn();
    return;
  }
  on_finish_ = std::move(fn);
}

}  // namespace hixl
