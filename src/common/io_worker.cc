#include "common/io_worker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/fork_fds.h"
#include "common/log.h"

namespace hixl {

IoWorker::IoWorker(std::string name) : name_(std::move(name)) {}

IoWorker::~IoWorker() {
  Stop();
  CloseKeptFd(epfd_);
  CloseKeptFd(wake_fd_);
}

bool IoWorker::Start() {
  epfd_ = OpenKeptFd([] { return epoll_create1(EPOLL_CLOEXEC); });
  wake_fd_ = OpenKeptFd([] { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); });
  if (epfd_ < 0 || wake_fd_ < 0) {
    HIXL_LOGE("%s: epoll_create1/eventfd failed: %s", name_.c_str(), std::strerror(errno));
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // nullptr marks the wake-up eventfd
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    HIXL_LOGE("%s: epoll_ctl(eventfd) failed: %s", name_.c_str(), std::strerror(errno));
    return false;
  }
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void IoWorker::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  stop_.store(true);
  if (thread_.joinable()) {
    Wake();
    thread_.join();
  }
}

void IoWorker::Add(std::shared_ptr<Pollable> p, uint32_t events) {
  // Ownership is posted before the fd is registered, so that a Remove from
  // a first event (a peer that connects and hangs up at once) is queued
  // after it; registering from this thread lets the pollable Modify its
  // interest right away. Until the task runs, its copy of `p` keeps the
  // object alive.
  load_.fetch_add(1, std::memory_order_relaxed);
  Post([this, p]() mutable { owned_[p.get()] = std::move(p); });
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = p.get();
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, p->fd(), &ev) != 0) {
    HIXL_LOGE("%s: epoll_ctl(ADD fd=%d) failed: %s", name_.c_str(), p->fd(), std::strerror(errno));
    Pollable *raw = p.get();
    Post([this, p = std::move(p), raw] {
      p->OnShutdown();
      if (owned_.erase(raw) != 0) load_.fetch_sub(1, std::memory_order_relaxed);
    });
  }
}

void IoWorker::Remove(Pollable *p) {
  const int fd = p->fd();
  if (fd >= 0 && epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr) != 0) {
    HIXL_LOGW("%s: epoll_ctl(DEL fd=%d) failed: %s", name_.c_str(), fd, std::strerror(errno));
  }
  Post([this, p] {
    if (owned_.erase(p) != 0) load_.fetch_sub(1, std::memory_order_relaxed);
  });
}

bool IoWorker::Modify(Pollable *p, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = p;
  return epoll_ctl(epfd_, EPOLL_CTL_MOD, p->fd(), &ev) == 0;
}

bool IoWorker::Post(std::function<void()> fn) {
  bool taken = true;
  {
    MutexLock lock(&mu_);
    if (stopped_ && !OnWorkerThread()) {
      // The loop is gone or going: drop the task. Whatever it owned (e.g. a
      // stream whose Add came too late) is released with it, closing its fd.
      fn = nullptr;
      taken = false;
    } else {
      posted_.push_back(std::move(fn));
    }
  }
  Wake();
  return taken;
}

void IoWorker::PostAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) {
  {
    MutexLock lock(&mu_);
    if (stopped_ && !OnWorkerThread()) return;
    timers_.emplace(when, std::move(fn));
  }
  if (!OnWorkerThread()) Wake();  // the loop picks its next timeout anew
}

void IoWorker::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;  // EAGAIN means a wake-up is already pending
}

void IoWorker::RunPosted() {
  std::vector<std::function<void()>> tasks;
  {
    MutexLock lock(&mu_);
    tasks.swap(posted_);
    if (!timers_.empty()) {
      auto now = std::chrono::steady_clock::now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        tasks.push_back(std::move(timers_.begin()->second));
        timers_.erase(timers_.begin());
      }
    }
  }
  for (auto &t : tasks) {
    if (t) t();
  }
}

void IoWorker::Loop() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  auto next_tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (!stop_.load()) {
    int timeout_ms = 100;
    {
      MutexLock lock(&mu_);
      if (!timers_.empty()) {
        auto wait = timers_.begin()->first - std::chrono::steady_clock::now();
        // Rounded up: waking early would only spin.
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
        timeout_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, timeout_ms));
      }
    }
    int n = epoll_wait(epfd_, events, kMaxEvents, timeout_ms);
    if (n < 0 && errno != EINTR) {
      HIXL_LOGE("%s: epoll_wait failed: %s", name_.c_str(), std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      auto *p = static_cast<Pollable *>(events[i].data.ptr);
      if (p == nullptr) {
        uint64_t v;
        ssize_t r = read(wake_fd_, &v, sizeof(v));
        (void)r;
        continue;
      }
      // Removal is posted, so `p` stays alive through this batch.
      p->OnEvents(events[i].events);
    }
    RunPosted();
    auto now = std::chrono::steady_clock::now();
    if (now >= next_tick) {
      next_tick = now + std::chrono::milliseconds(100);
      for (auto &[raw, p] : owned_) p->OnTick(now);
      RunPosted();
    }
  }
  RunPosted();
  for (auto &[raw, p] : owned_) p->OnShutdown();
  owned_.clear();
  // Tasks posted from this thread meanwhile were accepted (Post said so):
  // shutting streams down fails requests, which may hand work on (a relay
  // submitting its next round). Run them, and what they post, too.
  for (int round = 0;; ++round) {
    {
      MutexLock lock(&mu_);
      if (posted_.empty()) break;
    }
    if (round == 1000) {  // tasks that keep posting tasks: a bug somewhere, not a reason to hang
      HIXL_LOGE("%s: tasks still posted after 1000 rounds of shutting down; dropping them", name_.c_str());
      MutexLock lock(&mu_);
      posted_.clear();
      break;
    }
    RunPosted();
  }
  load_.store(0);
}

IoWorker *PickWorker(const std::vector<std::unique_ptr<IoWorker>> &workers) {
  static std::atomic<size_t> rr{0};
  size_t start = rr.fetch_add(1, std::memory_order_relaxed);
  IoWorker *best = nullptr;
  for (size_t i = 0; i < workers.size(); ++i) {
    IoWorker *w = workers[(start + i) % workers.size()].get();
    if (best == nullptr || w->load() < best->load()) best = w;
  }
  return best;
}

}  // namespace hixl
