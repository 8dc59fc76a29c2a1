#include "engine/connect_pool.h"

namespace hixl {

bool ConnectPool::Submit(const std::string &key, std::function<void()> task) {
  MutexLock lock(&mu_);
  if (stopping_ || waiting_ >= capacity_) return false;
  if (workers_.empty()) {
    for (size_t i = 0; i < threads_; ++i) workers_.emplace_back([this] { Run(); });
  }
  auto &q = pending_[key];
  q.push_back(std::move(task));
  ++waiting_;
  if (q.size() == 1 && running_.count(key) == 0) ready_.push_back(key);
  cv_.NotifyOne();
  return true;
}

void ConnectPool::Stop() {
  std::vector<std::thread> workers;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    pending_.clear();
    ready_.clear();
    waiting_ = 0;
    workers.swap(workers_);
    cv_.NotifyAll();
  }
  for (auto &t : workers) t.join();
}

void ConnectPool::Run() {
  UniqueLock lock(&mu_);
  for (;;) {
    cv_.Wait(lock, [this]() REQUIRES(mu_) { return stopping_ || !ready_.empty(); });
    if (stopping_) return;
    std::string key = ready_.front();
    ready_.pop_front();
    auto it = pending_.find(key);
    std::function<void()> task = std::move(it->second.front());
    it->second.pop_front();
    --waiting_;
    running_.insert(key);
    lock.Unlock();
    task();
    lock.Lock();
    running_.erase(key);
    it = pending_.find(key);
    if (it != pending_.end()) {
      if (it->second.empty()) {
        pending_.erase(it);
      } else {
        ready_.push_back(key);
        cv_.NotifyOne();
      }
    }
  }
}

}  // namespace hixl
