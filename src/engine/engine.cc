#include "engine/engine.h"

#include <sys/epoll.h>

#include <cinttypes>

#include "common/log.h"
#include "engine/host_identity.h"
#include "transport/shm/socket_owner.h"
#include "transport/tcp/listener.h"
#include "transport/tcp/socket.h"
#include "wire/frame.h"

namespace hixl {
namespace {

bool IsWildcard(const EngineAddress &a) { return a.ip == "0.0.0.0" || a.ip == "::"; }

}  // namespace

Engine::Engine(EngineOptions opts)
    : opts_(std::move(opts)),
      registry_(opts_.max_regions),
      pool_(opts_.buffer_pool_count, static_cast<size_t>(opts_.buffer_pool_mib) << 20),
      links_(opts_),
      connect_pool_(opts_.connect_pool_threads, opts_.connect_pool_queue) {}

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
  std::shared_ptr<Engine> engine(new Engine(std::move(opts)));
  s = engine->Start(local);
  if (s != SUCCESS) {
    engine->Shutdown();
    return s;
  }
  *out = std::move(engine);
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
  if (!opts_.AllowsProtocol("tcp") && !opts_.AllowsProtocol("shm")) {
    HIXL_LOGW("Initialize %s: protocol_desc allows neither tcp nor shm, the transports of this build: every "
              "Connect will fail",
              name_.c_str());
  }
  for (uint32_t i = 0; i < opts_.io_threads; ++i) {
    workers_.push_back(std::make_unique<IoWorker>("hixl-io" + std::to_string(i)));
    if (!workers_.back()->Start()) return FAILED;
    if (opts_.AllowsProtocol("shm")) {
      copy_workers_.push_back(std::make_unique<IoWorker>("hixl-copy" + std::to_string(i)));
      if (!copy_workers_.back()->Start()) return FAILED;
    }
  }
  std::string why;
  if (local.has_port && local.port > 0) {
    int fd = tcp::ListenTcp(local, &why);
    if (fd < 0) {
      HIXL_LOGE("Initialize %s: cannot listen: %s", name_.c_str(), why.c_str());
      return FAILED;
    }
    workers_[0]->Add(std::make_shared<tcp::Listener>(fd, workers_[0].get(), &workers_, this), EPOLLIN);
    HIXL_LOGI("engine %s listening (%u I/O threads, %u streams per link)", name_.c_str(), opts_.io_threads,
              opts_.tcp_streams_per_link);
  } else if (!tcp::IsLocalIp(local, &why)) {
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
    std::lock_guard<std::mutex> lock(house_mu_);
    house_cv_.notify_all();
  }
  if (housekeeper_.joinable()) housekeeper_.join();
  {
    // Connects in progress (pool tasks included) give up: see LinkParams::cancel.
    std::lock_guard<std::mutex> lock(connect_mu_);
    connect_cv_.notify_all();
  }
  connect_pool_.Stop();
  // Peers on this host copy into our memory themselves: they forget every
  // region before Finalize returns, since the memory may be freed then.
  // (Without such peers this returns at once.) All at once, under one limit:
  // a frozen peer costs kRevokeLimit, not that for each region.
  std::vector<uint64_t> revocations;
  // (Peers over tcp are not told: their links close below.)
  for (const auto &region : registry_.Export()) revocations.push_back(revocation_.Start(region, /*tell_tcp=*/false));
  {
    std::lock_guard<std::mutex> lock(dereg_mu_);
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
  for (auto &w : copy_workers_) w->Stop();
  for (auto &w : workers_) w->Stop();
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
  if (type == MEM_DEVICE) {
    HIXL_LOGE("RegisterMem: MEM_DEVICE (addr=0x%" PRIxPTR ") needs an accelerator runtime this build lacks",
              mem.addr);
    return UNSUPPORTED;
  }
  if (type != MEM_HOST) {
    HIXL_LOGE("RegisterMem: unknown memory type %d", static_cast<int>(type));
    return PARAM_INVALID;
  }
  Status s = registry_.Register(mem.addr, mem.len, type, &handle);
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
  return s;
}

Status Engine::DeregisterMem(MemHandle handle) {
  if (handle == nullptr) {
    HIXL_LOGE("DeregisterMem: handle is null");
    return PARAM_INVALID;
  }
  // A second call for the same handle returns only when the first is done,
  // not at once because the handle is already gone from the registry.
  const auto id = reinterpret_cast<uintptr_t>(handle);
  std::unique_lock<std::mutex> lock(dereg_mu_);
  dereg_cv_.wait(lock, [&] { return deregistering_.count(id) == 0; });
  std::shared_ptr<Region> r = registry_.Revoke(handle);
  uint64_t revocation = 0;
  if (r == nullptr) {
    auto it = unconfirmed_.find(id);
    if (it == unconfirmed_.end()) return SUCCESS;
    r = it->second.region;  // an earlier call returned FAILED: wait for its peers again
    revocation = it->second.revocation;
  }
  deregistering_.insert(id);
  lock.unlock();
  // Every peer forgets the region. Those on this host copy into our memory
  // themselves: they finish copies into it before they answer, and we wait
  // for them. Those over tcp, whose frames into it we refuse anyway, are
  // waited for a short while, so that their batches started from now on
  // are refused whole by their own check (see Revocation).
  if (revocation == 0) revocation = revocation_.Start({r->addr, r->len}, /*tell_tcp=*/true);
  revocation_.WaitTcp(revocation, kNoticeLimit);
  const bool confirmed = revocation_.Wait(revocation, kRevokeLimit);
  registry_.WaitUnpinned(*r);
  lock.lock();
  deregistering_.erase(id);
  if (confirmed) {
    unconfirmed_.erase(id);
  } else {
    unconfirmed_[id] = Unconfirmed{r, revocation};
  }
  dereg_cv_.notify_all();
  if (!confirmed) {
    HIXL_LOGE("DeregisterMem %p (0x%" PRIxPTR "+%zu): a peer on this host may still be copying into it; the memory "
              "must stay mapped; call DeregisterMem again to wait for it",
              handle, r->addr, r->len);
    return FAILED;
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
  std::vector<uint8_t> body;
  wire::EncodeNotify(n, &body);
  auto done = std::make_shared<Completion>();
  link->tcp->SubmitControl(tcp::MakeRequest(wire::MsgType::kNotifyReq, std::move(body), done));
  s = Finish(*link->tcp, done, deadline);
  if (s != SUCCESS) HIXL_LOGE("SendNotify %s: name '%s' failed with status %u", key.c_str(), n.name.c_str(), s);
  return s;
}

Status Engine::GetNotifies(std::vector<NotifyDesc> &notifies) {
  notifies = inbox_.Drain();
  return SUCCESS;
}

Status Engine::OnHello(const wire::Hello &hello, wire::HelloAck *ack) {
  ack->target = name_;
  ack->host = host_;  // the pid is withheld by the stream unless OnControlStream allowed direct copies
  EngineAddress dialed;
  std::string why;
  bool same = ParseEngineAddress(hello.target, &dialed, &why) && dialed.port == local_.port &&
              (dialed.ip == local_.ip || IsWildcard(local_));
  if (!same) {
    ack->reason = "this is engine " + name_ + ", not " + hello.target;
    return FAILED;
  }
  if (stopping_) {
    ack->reason = "engine " + name_ + " is finalizing";
    return FAILED;
  }
  ack->regions = registry_.Export();
  return SUCCESS;
}

Status Engine::OnNotify(uint64_t link_key, const std::string &peer, wire::Notify &&notify) {
  // Shared by address, not port: one host's many links take a share.
  const std::string host = peer.substr(0, peer.rfind(':'));
  return inbox_.Push(link_key, host, std::move(notify.name), std::move(notify.msg));
}

bool Engine::SameKernel(const wire::HostIdentity &other) const {
  return !host_.boot_id.empty() && other.boot_id == host_.boot_id && other.pid_ns == host_.pid_ns;
}

bool Engine::SameHost(const wire::HostIdentity &other) const { return SameKernel(other) && other.pid != 0; }

bool Engine::MayCopyDirectly(const tcp::TargetStream &stream, const wire::Hello &hello) const {
  // Only a peer on this host can copy into our memory without asking (and
  // only if our protocol_desc allows shm: otherwise it is told pid 0), and
  // only one that is the process it claims to be: anyone could claim our
  // host identity (it is in every HELLO_ACK) and then, never acknowledging
  // a REVOKE, hold every DeregisterMem for kRevokeLimit. One whose claim
  // cannot be checked is not told our pid, so it uses tcp, and is waited
  // for by revocations only as a tcp peer.
  if (!SameHost(hello.host) || !opts_.AllowsProtocol("shm")) return false;
  std::string why;
  if (!shm::PeerHoldsSocket(stream.fd(), static_cast<pid_t>(hello.host.pid), &why)) {
    HIXL_LOGW("serving %s: it claims to be pid %u on this host, which could not be confirmed (%s); it gets tcp",
              hello.initiator.c_str(), hello.host.pid, why.c_str());
    return false;
  }
  return true;
}

bool Engine::OnControlStream(const std::shared_ptr<tcp::TargetStream> &stream, const wire::Hello &hello) {
  const bool direct = MayCopyDirectly(*stream, hello);
  revocation_.AddPeer(stream, direct);
  return direct;
}

void Engine::OnControlStreamClosed(tcp::TargetStream *stream) { revocation_.RemovePeer(stream); }

}  // namespace hixl
