// layer_push.h: the task behind a layer-wise push (CacheTask).
//
// Everything is checked and planned before the task starts: one transfer
// plan per (destination, source layer). The task's thread waits for each
// source layer (LayerSynchronizer), then moves that layer to every
// destination that wants it, while the caller computes the next one; a
// destination that failed gets no more layers. At the end each destination
// can be told (a ready notice, after the data).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {

class __attribute__((visibility("hidden"))) CacheTask::Impl : public std::enable_shared_from_this<CacheTask::Impl> {
 public:
  explicit Impl(size_t destinations) : results_(destinations) {}
  // The thread holds the last reference when nobody waited for it: then it
  // is let go (detached) here, on itself.
  ~Impl() { Join(); }
  Impl(const Impl &) = delete;
  Impl &operator=(const Impl &) = delete;

  // Runs body(this) on the task's thread, which keeps this object alive.
  void Start(std::function<void(Impl *)> body);
  // Asks the task to end after the layer it moves (Finalize).
  void Stop() { stop_.store(true); }
  bool stopping() const { return stop_.load(); }
  // Waits for the thread. Any thread but the task's own may call it, at once.
  void Join();

  // The task's thread reports through these.
  void Update(size_t destination, const LayerPushResult &result);
  void Finish();

  Status Synchronize(int32_t timeout_ms);
  std::vector<LayerPushResult> Results(int32_t timeout_ms);
  bool finished();

 private:
  // Waits until finished or the time is up (timeout < 0: no limit).
  bool WaitDone(int32_t timeout_ms, std::unique_lock<std::mutex> &lock);

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;                    // guarded by mu_
  std::vector<LayerPushResult> results_;  // guarded by mu_
  std::atomic<bool> stop_{false};
  std::mutex join_mu_;  // one joiner at a time
  std::thread thread_;  // guarded by join_mu_ once started
};

}  // namespace llm_datadist
