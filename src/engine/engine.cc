#include "engine/engine.h"

#include <sys/epoll.h>

#include <cinttypes>

#include "common/log.h"
#include "control/control_server.h"
#include "device/cuda/cuda_driver.h"
#include "engine/host_identity.h"
#include "transport/registry.h"
#include "wire/frame.h"

namespace hixl {

Engine::Engine(EngineOptions opts, std::shared_ptr<const auth::Authenticator> auth)
    : opts_(std::move(opts)),
      auth_(std::move(auth)),
      registry_(opts_.max_regions),
      pool_(opts_.buffer_pool_count, static_cast<size_t>(opts_.buffer_pool_mib) << 20),
      links_(opts_),
      connect_pool_(opts_.connect_pool_threads, opts_.connect_pool_queue),
      serving_(local_, name_, host_, registry_, revocation_, inbox_, transports_, stopping_, auth_.get()) {}

Status Engine::Create(const std::string &local_engine, const std::map<std::string, std::string> &options,
                      std::shared_ptr<Engine> *out) {
  EngineAddress local;
  std::string why;
  if (!ParseEngineAddress(local_engine, &local, &why)) {
    HIXL_LOGE("Initialize: local_engine '%s' is malformed: %s", local_engine.c_str(), why.c_str());
    return PARAM_INVALID;
  }
  EngineOptions opts;
  Status s = ParseEngineOptions(options, &opts, &why);
  if (s != SUCCESS) {
    HIXL_LOGE("Initialize: %s", why.c_str());
    return s;
  }
  std::shared_ptr<const auth::Authenticator> auth;
  if ((s = LoadAuthKey(opts.auth_key_file, &auth)) != SUCCESS) return s;
  std::shared_ptr<Engine> engine(new Engine(std::move(opts), std::move(auth)));
  s = engine->Start(local);
  if (s != SUCCESS) {
    engine->Shutdown();
    return s;
  }
  *out = std::move(engine);
  return SUCCESS;
}

Status Engine::LoadAuthKey(const std::string &option, std::shared_ptr<const auth::Authenticator> *out) {
  const std::string path = auth::KeyFilePath(option);
  if (path.empty()) {
    // Once per process, however many engines it makes.
    static std::atomic<bool> told{false};
    if (!told.exchange(true)) {
      HIXL_LOGW("no auth key: any peer that can connect may read and write registered memory (set auth.key_file "
                "or HIXL_AUTH_KEY_FILE; see docs/security.md)");
    }
    return SUCCESS;
  }
  std::string why;
  Status s = auth::Authenticator::FromFile(path, out, &why);
  if (s != SUCCESS) {
    HIXL_LOGE("Initialize: %s", why.c_str());
    return s;
  }
  HIXL_LOGI("Initialize: peers must prove they hold the key in '%s'", path.c_str());
  return SUCCESS;
}

Status Engine::Start(const EngineAddress &given) {
  // An address without a port is a client, unless the options name the port
  // to listen on (comm_resource_config.listen_port); a port in the address
  // itself wins.
  EngineAddress local = given;
  if (!(local.has_port && local.port > 0) && opts_.listen_port > 0) {
    local.has_port = true;
    local.port = static_cast<uint16_t>(opts_.listen_port);
  }
  local_ = local;
  name_ = local.ToString();
  host_ = LocalHostIdentity();
  for (uint32_t i = 0; i < opts_.io_threads; ++i) {
    workers_.push_back(std::make_unique<IoWorker>("hixl-io" + std::to_string(i)));
    if (!workers_.back()->Start()) return FAILED;
  }
  Status s = StartTransports();
  if (s != SUCCESS) return s;
  std::string why;
  if (local.has_port && local.port > 0) {
    if (!ServeControl(local, &workers_, &serving_, &why)) {
      HIXL_LOGE("Initialize %s: cannot listen: %s", name_.c_str(), why.c_str());
      return FAILED;
    }
    HIXL_LOGI("engine %s listening (%u I/O threads)", name_.c_str(), opts_.io_threads);
  } else if (!IsLocalIp(local, &why)) {
    HIXL_LOGE("Initialize %s: the address is not local to this host: %s", name_.c_str(), why.c_str());
    return FAILED;
  }
  housekeeper_ = std::thread([this] { Housekeeping(); });
  return SUCCESS;
}

Engine::~Engine() { Shutdown(); }

void Engine::Shutdown() {
  if (stopping_.exchange(true)) return;
  {
    MutexLock lock(&house_mu_);
    house_cv_.NotifyAll();
  }
  if (housekeeper_.joinable()) housekeeper_.join();
  {
    // Connects in progress (pool tasks included) give up: see LinkParams::cancel.
    MutexLock lock(&connect_mu_);
    connect_cv_.NotifyAll();
  }
  connect_pool_.Stop();
  // Peers on this host copy into our memory themselves: they forget every
  // region before Finalize returns, since the memory may be freed then.
  // (Without such peers this returns at once.) All at once, under one limit:
  // a frozen peer costs kRevokeLimit, not that for each region.
  std::vector<uint64_t> revocations;
  // (Peers over tcp are not told: their links close below.)
  const auto regions = registry_.Snapshot();
  for (const auto &r : regions->regions()) {
    revocations.push_back(revocation_.Start({r->addr, r->len}, /*tell_tcp=*/false));
  }
  {
    MutexLock lock(&dereg_mu_);
    for (const auto &[handle, u] : unconfirmed_) revocations.push_back(u.revocation);
  }
  const auto until = std::chrono::steady_clock::now() + kRevokeLimit;
  size_t unconfirmed = 0;
  for (uint64_t id : revocations) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (!revocation_.Wait(id, std::max(left, std::chrono::milliseconds(0)))) ++unconfirmed;
    revocation_.Forget(id);
  }
  // unconfirmed_ stays: a DeregisterMem racing this (the Python binding
  // allows it) of such a handle returns FAILED, not SUCCESS.
  if (unconfirmed > 0) {
    HIXL_LOGE("Finalize: %zu region(s) were not confirmed revoked by peers on this host (see above); such a peer, "
              "once it runs again, may still write into that memory until it notices the link is gone",
              unconfirmed);
  }
  auto links = links_.TakeAll();
  CloseLinks(links, "engine is finalizing");
  async_.FailAll();
  for (auto &t : transports_) t->Stop();
  for (auto &w : workers_) w->Stop();
  // No peer can reach the regions any more: transports drop their keys.
  for (const auto &r : regions->regions()) {
    for (auto &t : transports_) t->OnDeregister(*r);
  }
  if (pinned_pool_) {
    if (cuda::Driver *driver = cuda::GetDriver(nullptr)) driver->UnpinHost(pool_.memory());
  }
  HIXL_LOGI("engine %s finalized", name_.c_str());
}

Status Engine::RegisterMem(const MemDesc &mem, MemType type, MemHandle &handle) {
  if (mem.addr == 0 || mem.len == 0) {
    HIXL_LOGE("RegisterMem: addr=0x%" PRIxPTR " len=%zu: neither may be 0", mem.addr, mem.len);
    return PARAM_INVALID;
  }
  if (mem.addr + mem.len < mem.addr) {
    HIXL_LOGE("RegisterMem: addr=0x%" PRIxPTR " len=%zu wraps around the address space", mem.addr, mem.len);
    return PARAM_INVALID;
  }
  std::string why;
  const MemoryKind *kind = MemoryKindOf(type, &why);
  if (kind == nullptr) {
    HIXL_LOGE("RegisterMem: addr=0x%" PRIxPTR " len=%zu: %s", mem.addr, mem.len, why.c_str());
    return type == MEM_DEVICE ? UNSUPPORTED : PARAM_INVALID;
  }
  MemPlacement where;
  Status s = kind->CheckRegistration(mem.addr, mem.len, &where, &why);
  if (s != SUCCESS) {
    HIXL_LOGE("RegisterMem: addr=0x%" PRIxPTR " len=%zu as %s memory: %s", mem.addr, mem.len, kind->name(),
              why.c_str());
    return s;
  }
  s = registry_.Register(
      mem.addr, mem.len, *kind,
      [this, &where](Region &r) {
        r.placement = where;
        return PrepareRegion(r);
      },
      &handle);
  if (s == SUCCESS && stopping_) {
    // Racing Finalize (a caller's bug in C++; the Python binding allows it):
    // Shutdown may have listed the regions to revoke from same-host peers
    // before this one was in, and such a peer could copy into it after
    // Finalize returned. Take it back out the way DeregisterMem does.
    HIXL_LOGE("RegisterMem 0x%" PRIxPTR "+%zu: the engine is finalizing", mem.addr, mem.len);
    DeregisterMem(handle);
    handle = nullptr;
    return FAILED;
  }
  if (s == SUCCESS) HIXL_LOGD("RegisterMem 0x%" PRIxPTR "+%zu -> %p", mem.addr, mem.len, handle);
  if (s == SUCCESS && type == MEM_DEVICE) PinPoolForDevice();
  return s;
}

void Engine::PinPoolForDevice() {
  if (!pool_.enabled() || pool_pinned_.exchange(true)) return;
  std::string why;
  cuda::Driver *driver = cuda::GetDriver(&why);
  if (driver == nullptr || !driver->PinHost(pool_.memory(), pool_.bytes(), &why)) {
    // Staging still works, through pageable memory (slower copies).
    HIXL_LOGW("RegisterMem: cannot page-lock the buffer pool (%zu bytes) for device copies: %s", pool_.bytes(),
              why.c_str());
    return;
  }
  pinned_pool_ = true;
}

Status Engine::DeregisterMem(MemHandle handle) {
  if (handle == nullptr) {
    HIXL_LOGE("DeregisterMem: handle is null");
    return PARAM_INVALID;
  }
  // A second call for the same handle returns only when the first is done,
  // not at once because the handle is already gone from the registry.
  const auto id = reinterpret_cast<uintptr_t>(handle);
  UniqueLock lock(&dereg_mu_);
  dereg_cv_.Wait(lock, [&]() REQUIRES(dereg_mu_) { return deregistering_.count(id) == 0; });
  std::shared_ptr<Region> r = registry_.Revoke(handle);
  uint64_t revocation = 0;
  if (r == nullptr) {
    auto it = unconfirmed_.find(id);
    if (it == unconfirmed_.end()) return SUCCESS;
    r = it->second.region;  // an earlier call returned FAILED: wait for its peers again
    revocation = it->second.revocation;
  }
  deregistering_.insert(id);
  lock.Unlock();
  // Every peer forgets the region. Those on this host copy into our memory
  // themselves: they finish copies into it before they answer, and we wait
  // for them. Those over tcp, whose frames into it we refuse anyway, are
  // waited for a short while, so that their batches started from now on
  // are refused whole by their own check (see Revocation).
  if (revocation == 0) revocation = revocation_.Start({r->addr, r->len}, /*tell_tcp=*/true);
  revocation_.WaitTcp(revocation, kNoticeLimit);
  const bool confirmed = revocation_.Wait(revocation, kRevokeLimit);
  registry_.WaitUnpinned(*r);
  // Neither a peer nor a batch of ours uses it now: transports drop their
  // keys. (Unconfirmed, a peer on this host may still copy: not yet.)
  if (confirmed) {
    for (auto &t : transports_) t->OnDeregister(*r);
  }
  lock.Lock();
  deregistering_.erase(id);
  if (confirmed) {
    unconfirmed_.erase(id);
  } else {
    unconfirmed_[id] = Unconfirmed{r, revocation};
  }
  dereg_cv_.NotifyAll();
  if (!confirmed) {
    HIXL_LOGE("DeregisterMem %p (0x%" PRIxPTR "+%zu): a peer on this host may still be copying into it; the memory "
              "must stay mapped; call DeregisterMem again to wait for it",
              handle, r->addr, r->len);
    return FAILED;
  }
  return SUCCESS;
}

Status Engine::StartTransports() {
  // protocol_desc's order (each transport once, by any of its names), or
  // every transport by rank.
  std::vector<TransportInfo> chosen;
  auto add = [&chosen](TransportInfo info) {
    for (const auto &c : chosen) {
      if (c.name == info.name) return;
    }
    chosen.push_back(std::move(info));
  };
  for (const auto &desc : opts_.protocols) {
    TransportInfo info;
    if (Transports().Find(desc.substr(0, desc.find(':')), &info)) add(std::move(info));
  }
  const bool requested = !opts_.protocols.empty();
  if (!requested) {
    for (auto &info : Transports().All()) add(std::move(info));
  }
  TransportEnv env;
  env.local_name = name_;
  env.host = host_;
  env.heartbeat_ms = opts_.heartbeat_ms;
  env.io_workers = &workers_;
  env.cancel = &stopping_;
  env.auth = auth_;
  env.requested = requested;  // (then chosen holds only what protocol_desc names)
  env.rdma_traffic_class = static_cast<int>(opts_.rdma_traffic_class);
  env.rdma_service_level = static_cast<int>(opts_.rdma_service_level);
  for (const auto &info : chosen) {
    auto cfg = opts_.transport_config.find(info.name);
    env.config = cfg != opts_.transport_config.end() ? cfg->second : std::map<std::string, std::string>();
    std::unique_ptr<Transport> t;
    std::string why;
    Status s = info.make(env, &t, &why);
    if (s == UNSUPPORTED) {
      // Named by protocol_desc: the user expects it. Otherwise a build
      // without it is nothing to warn about.
      if (requested) {
        HIXL_LOGW("Initialize %s: transport %s is not available: %s", name_.c_str(), info.name.c_str(), why.c_str());
      } else {
        HIXL_LOGI("Initialize %s: transport %s is not available: %s", name_.c_str(), info.name.c_str(), why.c_str());
      }
      continue;
    }
    if (s != SUCCESS) {
      HIXL_LOGE("Initialize %s: transport %s: %s", name_.c_str(), info.name.c_str(), why.c_str());
      return s;
    }
    std::vector<uint8_t> offer;
    t->Offer(&offer);
    if (!offer.empty()) offers_.push_back({t->wire_id(), std::move(offer)});
    transports_.push_back(std::move(t));
  }
  if (transports_.empty()) {
    HIXL_LOGW("Initialize %s: no transport protocol_desc allows is available: every Connect will fail",
              name_.c_str());
  }
  return SUCCESS;
}

Status Engine::PrepareRegion(Region &region) {
  for (size_t i = 0; i < transports_.size(); ++i) {
    Status s = transports_[i]->OnRegister(region);
    if (s != SUCCESS) {
      HIXL_LOGE("RegisterMem 0x%" PRIxPTR "+%zu: transport %s refused it: %s", region.addr, region.len,
                transports_[i]->name(), StatusText(s).c_str());
      while (i-- > 0) transports_[i]->OnDeregister(region);
      return s;
    }
  }
  return SUCCESS;
}

Status Engine::SendNotify(const std::string &remote, const NotifyDesc &notify, int32_t timeout_ms) {
  std::string key;
  Status s = RemoteKey("SendNotify", remote, &key);
  if (s != SUCCESS) return s;
  if ((s = CheckTimeout("SendNotify", key, timeout_ms)) != SUCCESS) return s;
  if (notify.name.GetLength() > wire::kMaxNotifyField || notify.notify_msg.GetLength() > wire::kMaxNotifyField) {
    HIXL_LOGE("SendNotify %s: name is %zu bytes and notify_msg %zu bytes; each may have at most %zu", key.c_str(),
              notify.name.GetLength(), notify.notify_msg.GetLength(), wire::kMaxNotifyField);
    return PARAM_INVALID;
  }
  Deadline deadline = Deadline::AfterMillis(timeout_ms);
  LinkRef link;
  s = UseLink("SendNotify", key, deadline, &link);
  if (s != SUCCESS) return s;
  wire::Notify n;
  n.name.assign(notify.name.GetString(), notify.name.GetLength());
  n.msg.assign(notify.notify_msg.GetString(), notify.notify_msg.GetLength());
  auto done = std::make_shared<Completion>();
  link->control->Notify(n, done);
  s = Finish(link->control->channel(), done, deadline);
  // NOTIFY_FAILED is the target's answer (its inbox is full); TIMEOUT is
  // ours; the cause of anything else was logged where it happened.
  if (s == NOTIFY_FAILED || s == TIMEOUT) {
    HIXL_LOGE("SendNotify %s: name '%s': %s", key.c_str(), LogSafe(n.name).c_str(), StatusText(s).c_str());
  } else if (s != SUCCESS) {
    HIXL_LOGI("SendNotify %s: name '%s': %s", key.c_str(), LogSafe(n.name).c_str(), StatusText(s).c_str());
  }
  return s;
}

Status Engine::GetNotifies(std::vector<NotifyDesc> &notifies) {
  notifies = inbox_.Drain();
  return SUCCESS;
}

Status Engine::LinkTransport(const std::string &remote, std::string *transport) {
  std::string key;
  Status s = RemoteKey("LinkTransport", remote, &key);
  if (s != SUCCESS) return s;
  LinkRef link = links_.Acquire(key);
  if (!link || link->broken()) return NOT_CONNECTED;
  *transport = link->transport->name();
  return SUCCESS;
}

}  // namespace hixl
