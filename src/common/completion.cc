#include "common/completion.h"

namespace hixl {

void Completion::PartDone(Status s) {
  bool last = pending_.fetch_sub(1) == 1;
  if (s == SUCCESS && !last) return;
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
