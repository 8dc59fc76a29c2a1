// io_worker.h: one epoll loop on its own thread, with posted tasks and
// timers. An engine runs a fixed number of these; every fd it watches (a
// socket, a transport's event fd) belongs to exactly one. Nothing here knows
// what the fd is: transports add Pollables.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace hixl {

class IoWorker;

// Something with a file descriptor that an IoWorker drives.
class Pollable {
 public:
  virtual ~Pollable() = default;
  virtual int fd() const = 0;
  // Called on the worker thread with the epoll events that fired.
  virtual void OnEvents(uint32_t events) = 0;
  // Called on the worker thread about every 100 ms.
  virtual void OnTick(std::chrono::steady_clock::time_point now) { (void)now; }
  // Called on the worker thread when the worker stops: close, fail, release.
  virtual void OnShutdown() = 0;
};

class IoWorker {
 public:
  explicit IoWorker(std::string name);
  ~IoWorker();
  IoWorker(const IoWorker &) = delete;
  IoWorker &operator=(const IoWorker &) = delete;

  bool Start();
  // Shuts every pollable down and joins the thread. Idempotent.
  void Stop();

  // Thread-safe. The worker keeps `p` alive until Remove.
  void Add(std::shared_ptr<Pollable> p, uint32_t events);
  // Thread-safe. Takes p->fd() out of the epoll set at once, so call it
  // before p closes its fd: a close() alone leaves the registration in place
  // while another thread still holds the file (in a poll() on it, say), and
  // the worker would go on reporting events to a pollable it let go of.
  // The worker lets go of `p` after the events it has already taken.
  void Remove(Pollable *p);
  // Thread-safe: epoll_ctl MOD.
  bool Modify(Pollable *p, uint32_t events);
  // Runs `fn` on the worker thread, soon. Once the worker has stopped, `fn`
  // is dropped and Post returns false (the caller finishes what it stood for).
  bool Post(std::function<void()> fn) EXCLUDES(mu_);
  // Runs `fn` on the worker thread at `when` (give or take a millisecond).
  void PostAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) EXCLUDES(mu_);
  bool OnWorkerThread() const { return std::this_thread::get_id() == thread_.get_id(); }
  size_t load() const { return load_.load(std::memory_order_relaxed); }

 private:
  void Loop() EXCLUDES(mu_);
  void Wake();
  // Runs the tasks posted and the timers due (without mu_: they post more).
  void RunPosted() EXCLUDES(mu_);

  const std::string name_;
  // Set by Start before the thread exists, constant after: read without a lock.
  int epfd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> load_{0};
  // Guards the queues other threads post to; never held while a task,
  // a timer or a pollable runs.
  Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
  std::vector<std::function<void()>> posted_ GUARDED_BY(mu_);
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> timers_ GUARDED_BY(mu_);
  std::map<Pollable *, std::shared_ptr<Pollable>> owned_;  // worker thread only: no lock
};

// Round-robin over the least loaded of a fixed set of workers.
IoWorker *PickWorker(const std::vector<std::unique_ptr<IoWorker>> &workers);

}  // namespace hixl
