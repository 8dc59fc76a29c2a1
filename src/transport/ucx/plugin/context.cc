#include "transport/ucx/plugin/context.h"

#include <poll.h>
#include <pthread.h>

#include <algorithm>

#include "transport/ucx/plugin/endpoint.h"
#include "transport/ucx/plugin/memory.h"
#include "transport/ucx/plugin/plugin_log.h"
#include "transport/ucx/plugin/rdma_probe.h"
#include "transport/ucx/plugin/settings.h"
#include "transport/ucx/plugin/status.h"

namespace hixl::ucx_plugin {
namespace {

// The longest the idle thread sleeps: UCX runs its keepalive, which is what
// finds a dead peer over shared memory, only from worker progress.
constexpr int kIdleWakeMs = 100;
// How long context_destroy waits for graceful closes still in flight.
constexpr int64_t kLastClosesMs = 1000;

}  // namespace

hixl_ucx_status_t Context::Create(const hixl_ucx_context_params_t &params, std::unique_ptr<Context> *out) {
  std::unique_ptr<Context> ctx(new Context());
  std::promise<hixl_ucx_status_t> ready;
  std::future<hixl_ucx_status_t> status = ready.get_future();
  ctx->thread_ = std::thread(&Context::Main, ctx.get(), &params, &ready);
  hixl_ucx_status_t st = status.get();
  if (st != HIXL_UCX_OK) {
    ctx->thread_.join();
    return st;
  }
  *out = std::move(ctx);
  return HIXL_UCX_OK;
}

Context::~Context() {
  // Shutdown joined the thread; a context that failed to start has none.
  if (thread_.joinable()) thread_.join();
}

void Context::Main(const hixl_ucx_context_params_t *params, std::promise<hixl_ucx_status_t> *ready) {
  thread_id_.store(std::this_thread::get_id());
  pthread_setname_np(pthread_self(), "hixl-ucx");
  hixl_ucx_status_t st = Init(*params);
  if (st != HIXL_UCX_OK) {
    Release();
    ready->set_value(st);
    return;
  }
  ready->set_value(HIXL_UCX_OK);  // `params` and `ready` are gone after this
  Loop();
  Release();
}

hixl_ucx_status_t Context::Init(const hixl_ucx_context_params_t &params) {
  bool rdma_present = false;
  if (WantsRdmaSettings(params)) {
    std::vector<std::string> devices;
    rdma_present = RdmaDevices(&devices) == HIXL_UCX_OK && !devices.empty();
  }
  std::vector<UcxSetting> plan;
  hixl_ucx_status_t st = PlanSettings(params, rdma_present, &plan);
  if (st != HIXL_UCX_OK) return st;
  ucp_config_t *config = nullptr;
  st = MakeConfig(plan, &config);
  if (st != HIXL_UCX_OK) return st;

  ucp_params_t up{};
  up.field_mask = UCP_PARAM_FIELD_FEATURES;
  up.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  if (params.name != nullptr) {
    up.field_mask |= UCP_PARAM_FIELD_NAME;
    up.name = params.name;
  }
  ucs_status_t us = ucp_init(&up, config, &ucp_);
  ucp_config_release(config);
  if (us != UCS_OK) {
    ucp_ = nullptr;
    UCXP_LOGE("creating a UCX context failed: %s", ucs_status_string(us));
    return FromUcs(us);
  }
  // One thread makes every UCX call: the worker needs no locks.
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  us = ucp_worker_create(ucp_, &wp, &worker_);
  if (us != UCS_OK) {
    worker_ = nullptr;
    UCXP_LOGE("creating a UCX worker failed: %s", ucs_status_string(us));
    return FromUcs(us);
  }
  us = ucp_worker_get_efd(worker_, &event_fd_);
  if (us != UCS_OK) {
    UCXP_LOGE("the UCX worker has no event fd: %s", ucs_status_string(us));
    return FromUcs(us);
  }
  ucp_address_t *addr = nullptr;
  size_t len = 0;
  us = ucp_worker_get_address(worker_, &addr, &len);
  if (us != UCS_OK) {
    UCXP_LOGE("the UCX worker has no address: %s", ucs_status_string(us));
    return FromUcs(us);
  }
  const auto *bytes = reinterpret_cast<const uint8_t *>(addr);
  address_.assign(bytes, bytes + len);
  ucp_worker_release_address(worker_, addr);
  UCXP_LOGI("UCX %s context ready: worker address of %zu bytes", ucp_get_version_string(), len);
  return HIXL_UCX_OK;
}

void Context::Release() {
  for (auto &ep : lingering_) ep->DestroyKeys();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (ucp_ != nullptr) ucp_cleanup(ucp_);
  worker_ = nullptr;
  ucp_ = nullptr;
  lingering_.clear();
}

void Context::Loop() {
  for (;;) {
    if (!RunQueued()) return;
    if (ucp_worker_progress(worker_) != 0) continue;
    ReapClosed();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!queue_.empty()) continue;
    }
    Wait(kIdleWakeMs);
  }
}

bool Context::RunQueued() {
  std::vector<std::function<void()>> tasks;  // empty: no allocation
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks.swap(queue_);
  }
  for (auto &task : tasks) task();
  return !stop_;
}

void Context::Wait(int max_ms) {
  // Arming drains the worker's events. BUSY: some arrived, or sends wait
  // for room (a full shared-memory FIFO), which no event announces; the
  // peer that makes room may need this CPU, so let it run first.
  ucs_status_t st = ucp_worker_arm(worker_);
  if (st == UCS_ERR_BUSY) {
    std::this_thread::yield();
    return;
  }
  if (st != UCS_OK) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) UCXP_LOGE("arming the UCX worker failed: %s; polling", ucs_status_string(st));
    max_ms = 1;
  }
  pollfd p{event_fd_, POLLIN, 0};
  poll(&p, 1, max_ms);
}

bool Context::ProgressUntil(const std::function<bool()> &done, Deadline deadline) {
  for (;;) {
    if (done()) return true;
    if (ucp_worker_progress(worker_) != 0) continue;
    if (done()) return true;
    if (deadline.Expired()) return false;
    Wait(std::min(deadline.RemainingMillis(), kIdleWakeMs));
  }
}

void Context::Retire(std::unique_ptr<Endpoint> closed) {
  if (!closed->Closed()) lingering_.push_back(std::move(closed));
}

void Context::ReapClosed() {
  auto closed = std::remove_if(lingering_.begin(), lingering_.end(), [](const auto &ep) { return ep->Closed(); });
  for (auto it = closed; it != lingering_.end(); ++it) (*it)->DestroyKeys();
  lingering_.erase(closed, lingering_.end());
}

bool Context::Enqueue(std::function<void()> task, Endpoint *ep, bool close_ep) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || (ep != nullptr && ep->closing_)) return false;
    if (close_ep) ep->closing_ = true;
    queue_.push_back(std::move(task));
    // Under mu_: the thread takes the task only after this, so the worker
    // (and its event fd) cannot be gone yet.
    ucp_worker_signal(worker_);
  }
  return true;
}

bool Context::Post(std::function<void()> task, Endpoint *ep) { return Enqueue(std::move(task), ep, false); }

hixl_ucx_status_t Context::Call(const char *what, const std::function<hixl_ucx_status_t()> &fn, Endpoint *ep,
                                bool close_ep) {
  if (OnProgressThread()) {
    UCXP_LOGE("%s may not be called from a UCX plug-in callback", what);
    return HIXL_UCX_ERR_INVALID;
  }
  std::promise<hixl_ucx_status_t> done;
  std::future<hixl_ucx_status_t> status = done.get_future();
  if (!Enqueue([&] { done.set_value(fn()); }, ep, close_ep)) {
    UCXP_LOGE("%s: the endpoint or context is being destroyed", what);
    return HIXL_UCX_ERR_CANCELED;
  }
  return status.get();
}

hixl_ucx_status_t Context::Shutdown() {
  if (OnProgressThread()) {
    UCXP_LOGE("context_destroy may not be called from a UCX plug-in callback");
    return HIXL_UCX_ERR_INVALID;
  }
  std::promise<void> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      UCXP_LOGE("context_destroy called twice");
      return HIXL_UCX_ERR_INVALID;
    }
    stopping_ = true;  // nothing can be queued after this task
    queue_.push_back([this, &done] {
      for (auto &[raw, ep] : endpoints) {
        ep->Close(0);
        Retire(std::move(ep));
      }
      endpoints.clear();
      for (auto &[raw, mem] : memories) mem->Unmap();
      memories.clear();
      // Graceful closes still in flight get a moment, then are let go:
      // ucp_worker_destroy asserts on a close request nobody released.
      auto closes_done = [this] {
        for (const auto &ep : lingering_) {
          if (ep->close_req_ != nullptr) return false;
        }
        return true;
      };
      ProgressUntil(closes_done, Deadline::AfterMillis(kLastClosesMs));
      for (auto &ep : lingering_) ep->AbandonClose();
      stop_ = true;
      done.set_value();
    });
    ucp_worker_signal(worker_);  // under mu_, as in Enqueue
  }
  done.get_future().wait();
  thread_.join();
  return HIXL_UCX_OK;
}

}  // namespace hixl::ucx_plugin
