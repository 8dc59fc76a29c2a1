// hixl.cc: class hixl::Hixl. Holds the engine and forwards to it; calls made
// before Initialize (or after Finalize) return FAILED.
//
// After fork() the child holds a copy of the engine object but none of its
// threads: it must not use it (calls fail) nor shut it down (joining threads
// that are not there faults, and shutting the links down would end the
// parent's). Finalize there lets go of it without running anything; the
// child's copies of the engine's fds are already closed (common/fork_fds.h).
// The child also starts with this class's locks free: one a parent thread
// held at the fork would otherwise never be let go there.
#include "hixl/hixl.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <initializer_list>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "engine/engine.h"

namespace hixl {
namespace {

std::string Str(const AscendString &s) { return std::string(s.GetString(), s.GetLength()); }

// Guards the two lists below. fork()'s handlers hold it across the fork, so
// that no HixlImpl is made or destroyed meanwhile.
Mutex g_live_mu;
// The locks of every HixlImpl, for fork()'s child handler.
std::set<Mutex *> *g_live GUARDED_BY(g_live_mu) PT_GUARDED_BY(g_live_mu) = nullptr;
// Engines let go of in a fork; never freed.
std::vector<std::shared_ptr<Engine>> *g_inherited GUARDED_BY(g_live_mu) PT_GUARDED_BY(g_live_mu) = nullptr;

// This process's pid, read once and again in fork()'s child (whose handler
// is installed before any engine exists). Every call checks it: a getpid()
// each time was 8 % of an async poller's time on a VM where system calls
// are dear (two per request: TransferAsync and GetTransferStatus). A child
// made by a raw clone() system call, which runs no fork handlers, is not
// told apart: only fork() is supported.
std::atomic<pid_t> g_pid{0};

pid_t Pid() {
  pid_t p = g_pid.load(std::memory_order_relaxed);
  if (p == 0) {
    p = getpid();
    g_pid.store(p, std::memory_order_relaxed);
  }
  return p;
}

// fork()'s handlers: the lock is taken before the fork and let go of after
// it, in the parent or in the child.
void LockLive() ACQUIRE(g_live_mu) { g_live_mu.Lock(); }
void UnlockLive() RELEASE(g_live_mu) { g_live_mu.Unlock(); }
// The child's one thread, the forking one, holds g_live_mu: no HixlImpl is
// being made or destroyed. Their locks may be held by parent threads that
// the child does not have: made anew (their data is as the fork found it).
void ResetInChild() RELEASE(g_live_mu) {
  g_pid.store(getpid(), std::memory_order_relaxed);
  for (Mutex *mu : *g_live) new (mu) Mutex();
  g_live_mu.Unlock();
}

void AddLive(std::initializer_list<Mutex *> mus) {
  MutexLock lock(&g_live_mu);
  if (g_live == nullptr) {
    g_live = new std::set<Mutex *>();
    g_inherited = new std::vector<std::shared_ptr<Engine>>();
    pthread_atfork(LockLive, UnlockLive, ResetInChild);
  }
  g_live->insert(mus);
}

void RemoveLive(std::initializer_list<Mutex *> mus) {
  MutexLock lock(&g_live_mu);
  for (Mutex *mu : mus) g_live->erase(mu);
}

// Keeps a fork's copy of its parent's engine to the process's exit:
// destroying it would shut it down. Reachable, so no leak is reported.
void KeepInherited(std::shared_ptr<Engine> engine) {
  MutexLock lock(&g_live_mu);
  g_inherited->push_back(std::move(engine));
}

}  // namespace

class Hixl::HixlImpl {
 public:
  HixlImpl() { AddLive({&mu_, &finalize_mu_}); }
  ~HixlImpl() { RemoveLive({&mu_, &finalize_mu_}); }
  HixlImpl(const HixlImpl &) = delete;
  HixlImpl &operator=(const HixlImpl &) = delete;

  // The engine, or nullptr (logged) when not initialized. Callers keep the
  // returned reference for the whole call, so a Finalize racing them (which
  // the API forbids) still cannot free the engine under their feet.
  std::shared_ptr<Engine> Get(const char *call) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (engine_ == nullptr) HIXL_LOGE("%s: the engine is not initialized", call);
    if (engine_ != nullptr && Forked()) {
      HIXL_LOGE("%s: the engine was initialized in process %d, of which this process (%d) is a fork: it has no "
                "engine threads here; Finalize it and Initialize a new one",
                call, static_cast<int>(pid_), static_cast<int>(getpid()));
      return nullptr;
    }
    return engine_;
  }
  bool Forked() const REQUIRES(mu_) { return Pid() != pid_; }

  // Guards the engine pointer (held through Initialize, briefly by every
  // other call).
  Mutex mu_;
  std::shared_ptr<Engine> engine_ GUARDED_BY(mu_);
  pid_t pid_ GUARDED_BY(mu_) = 0;  // the process that initialized engine_
  // Held through a whole Finalize: a second one, concurrent, returns only
  // when the first has shut the engine down (it promises that no engine
  // thread touches user memory any more, e.g. to free it). Guards no data;
  // taken before mu_.
  Mutex finalize_mu_ ACQUIRED_BEFORE(mu_);
};

Hixl::Hixl() : impl_(new HixlImpl()) {}

Hixl::~Hixl() { Finalize(); }

Status Hixl::Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options) {
  MutexLock lock(&impl_->mu_);
  if (impl_->engine_ != nullptr) {
    HIXL_LOGE("Initialize %s: already initialized as %s; call Finalize first", local_engine.GetString(),
              impl_->engine_->name().c_str());
    return FAILED;
  }
  std::map<std::string, std::string> opts;
  for (const auto &[k, v] : options) opts[Str(k)] = Str(v);
  impl_->pid_ = Pid();
  return Engine::Create(Str(local_engine), opts, &impl_->engine_);
}

void Hixl::Finalize() {
  MutexLock finalizing(&impl_->finalize_mu_);
  std::shared_ptr<Engine> engine;
  bool forked = false;
  pid_t owner = 0;
  {
    MutexLock lock(&impl_->mu_);
    engine.swap(impl_->engine_);
    forked = impl_->Forked();
    owner = impl_->pid_;
  }
  if (engine == nullptr) return;
  if (forked) {
    // Never destroyed (that would shut it down): the child's copy of the
    // parent's engine is left as it is, its memory to the process's exit.
    HIXL_LOGI("Finalize: the engine was initialized in process %d, of which this is a fork: left as it is",
              static_cast<int>(owner));
    KeepInherited(std::move(engine));
    return;
  }
  engine->Shutdown();
}

Status Hixl::RegisterMem(const MemDesc &mem, MemType type, MemHandle &mem_handle) {
  auto e = impl_->Get("RegisterMem");
  return e == nullptr ? FAILED : e->RegisterMem(mem, type, mem_handle);
}

Status Hixl::DeregisterMem(MemHandle mem_handle) {
  auto e = impl_->Get("DeregisterMem");
  return e == nullptr ? FAILED : e->DeregisterMem(mem_handle);
}

Status Hixl::Connect(const AscendString &remote_engine, int32_t timeout_in_millis) {
  auto e = impl_->Get("Connect");
  return e == nullptr ? FAILED : e->Connect(Str(remote_engine), timeout_in_millis);
}

Status Hixl::Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis) {
  auto e = impl_->Get("Disconnect");
  return e == nullptr ? FAILED : e->Disconnect(Str(remote_engine), timeout_in_millis);
}

Status Hixl::ConnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis) {
  auto e = impl_->Get("ConnectAsync");
  return e == nullptr ? FAILED : e->ConnectAsync(Str(remote_engine), timeout_in_millis);
}

Status Hixl::DisconnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis) {
  auto e = impl_->Get("DisconnectAsync");
  return e == nullptr ? FAILED : e->DisconnectAsync(Str(remote_engine), timeout_in_millis);
}

Status Hixl::GetAsyncConnectStatus(const AscendString &remote_engine, AsyncConnectStatus &status) {
  auto e = impl_->Get("GetAsyncConnectStatus");
  return e == nullptr ? FAILED : e->GetAsyncConnectStatus(Str(remote_engine), status);
}

Status Hixl::GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &status_map) {
  auto e = impl_->Get("GetAsyncConnectStatus");
  return e == nullptr ? FAILED : e->GetAsyncConnectStatus(status_map);
}

Status Hixl::TransferSync(const AscendString &remote_engine, TransferOp operation,
                          const std::vector<TransferOpDesc> &op_descs, int32_t timeout_in_millis) {
  auto e = impl_->Get("TransferSync");
  return e == nullptr ? FAILED : e->TransferSync(Str(remote_engine), operation, op_descs, timeout_in_millis);
}

Status Hixl::TransferAsync(const AscendString &remote_engine, TransferOp operation,
                           const std::vector<TransferOpDesc> &op_descs, const TransferArgs &optional_args,
                           TransferReq &req) {
  auto e = impl_->Get("TransferAsync");
  return e == nullptr ? FAILED : e->TransferAsync(Str(remote_engine), operation, op_descs, optional_args, req);
}

Status Hixl::GetTransferStatus(const TransferReq &req, TransferStatus &status) {
  auto e = impl_->Get("GetTransferStatus");
  return e == nullptr ? FAILED : e->GetTransferStatus(req, status);
}

Status Hixl::GetTransferStatus(const GetTransferStatusArgs &args, std::vector<TransferResult> &results) {
  auto e = impl_->Get("GetTransferStatus");
  return e == nullptr ? FAILED : e->GetTransferStatus(args, results);
}

Status Hixl::SendNotify(const AscendString &remote_engine, const NotifyDesc &notify, int32_t timeout_in_millis) {
  auto e = impl_->Get("SendNotify");
  return e == nullptr ? FAILED : e->SendNotify(Str(remote_engine), notify, timeout_in_millis);
}

Status Hixl::GetNotifies(std::vector<NotifyDesc> &notifies) {
  auto e = impl_->Get("GetNotifies");
  return e == nullptr ? FAILED : e->GetNotifies(notifies);
}

Status Hixl::GetLinkTransport(const AscendString &remote_engine, AscendString &transport) {
  auto e = impl_->Get("GetLinkTransport");
  if (e == nullptr) return FAILED;
  std::string name;
  Status s = e->LinkTransport(Str(remote_engine), &name);
  if (s == SUCCESS) transport = AscendString(name.c_str());
  return s;
}

Status Hixl::GetRemoteMems(const AscendString &remote_engine, std::vector<MemDesc> &mems, int32_t timeout_in_millis) {
  auto e = impl_->Get("GetRemoteMems");
  return e == nullptr ? FAILED : e->GetRemoteMems(Str(remote_engine), mems, timeout_in_millis);
}

Status Hixl::GetCapability(FeatureType feature_type, int32_t &value) {
  if (static_cast<int32_t>(feature_type) < 0) {
    HIXL_LOGE("GetCapability: feature type %d is negative", static_cast<int>(feature_type));
    return PARAM_INVALID;
  }
  switch (feature_type) {
    case AUTO_CONNECT:
      value = FEATURE_SUPPORTED;
      break;
    case CLIENT_SERVER_COMM:
      value = FEATURE_SUPPORTED;
      break;
    default:
      value = FEATURE_NOT_SUPPORTED;
      break;
  }
  return SUCCESS;
}

}  // namespace hixl
