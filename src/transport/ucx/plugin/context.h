// context.h: one ucp_context with ONE worker, and the progress thread that
// owns both. Every UCX call of the plug-in runs on that thread: it creates
// the context and worker, runs the tasks other threads hand it, progresses
// the worker, and sleeps on the worker's event fd (ucp_worker_arm) when
// there is nothing to do. It runs for as long as the context lives, so a
// process that only serves still answers: over UCX's tcp and shared-memory
// transports put and get are emulated and complete only when the target's
// worker progresses.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/deadline.h"
#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

class Endpoint;
class Memory;

class Context {
 public:
  // Starts the thread, which makes the context and worker; waits for that.
  static hixl_ucx_status_t Create(const hixl_ucx_context_params_t &params, std::unique_ptr<Context> *out);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  // Force-closes the endpoints, unmaps the memory, stops the thread (which
  // releases the worker and context). Not from the progress thread.
  hixl_ucx_status_t Shutdown();

  // Runs `fn` on the progress thread and returns its status. INVALID
  // (logged, naming `what`) when called on the progress thread, i.e. from a
  // callback; CANCELED when `ep` is closing or the context is stopping.
  // With `close_ep`, marks `ep` closing as the task is queued, so that every
  // task queued for `ep` before runs before it and none is queued after.
  hixl_ucx_status_t Call(const char *what, const std::function<hixl_ucx_status_t()> &fn, Endpoint *ep = nullptr,
                         bool close_ep = false);
  // Queues `task` for the progress thread; false when `ep` is closing or
  // the context is stopping (then the task is dropped).
  bool Post(std::function<void()> task, Endpoint *ep);

  bool OnProgressThread() const { return std::this_thread::get_id() == thread_id_.load(); }

  // Progress thread only, below.
  // Progresses the worker until done() or `deadline`; false at the deadline.
  bool ProgressUntil(const std::function<bool()> &done, Deadline deadline);
  ucp_context_h ucp() const { return ucp_; }
  ucp_worker_h worker() const { return worker_; }
  // Deletes an endpoint Close()d, or keeps it until UCX is done with it
  // (a graceful close, a cut batch still in flight), or the context ends.
  void Retire(std::unique_ptr<Endpoint> closed);

  // The worker's address; set before Create returns, constant after.
  const std::vector<uint8_t> &address() const { return address_; }

  // Endpoints and registrations, keyed by their handles. Progress thread only.
  std::map<Endpoint *, std::unique_ptr<Endpoint>> endpoints;
  std::map<Memory *, std::unique_ptr<Memory>> memories;

 private:
  Context() = default;
  // The thread: Init, then Loop until stopped, then Release.
  void Main(const hixl_ucx_context_params_t *params, std::promise<hixl_ucx_status_t> *ready);
  hixl_ucx_status_t Init(const hixl_ucx_context_params_t &params);
  void Loop();
  void Release();
  // Runs the queued tasks; false once a task asked the thread to stop.
  bool RunQueued();
  // Sleeps on the worker's event fd until an event, a signal or `max_ms`.
  void Wait(int max_ms);
  void ReapClosed();
  // Queues `task` unless the context is stopping or `ep` closing; with
  // `close_ep`, marks `ep` closing in the same step.
  bool Enqueue(std::function<void()> task, Endpoint *ep, bool close_ep);

  // Set in Init on the progress thread, before Create returns; then only
  // read (the thread owns them, Shutdown joins it before ~Context).
  ucp_context_h ucp_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  std::vector<uint8_t> address_;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};

  std::mutex mu_;
  std::vector<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_

  // Progress thread only:
  bool stop_ = false;
  std::vector<std::unique_ptr<Endpoint>> lingering_;  // see Retire
};

}  // namespace hixl::ucx_plugin
