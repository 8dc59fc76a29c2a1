#include "engine/engine.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cinttypes>

#include "common/log.h"
#include "engine/host_identity.h"
#include "transport/tcp/socket.h"
#include "wire/frame.h"

namespace hixl {
namespace {

const char *OpName(TransferOp op) { return op == READ ? "READ" : "WRITE"; }

bool IsWildcard(const EngineAddress &a) { return a.ip == "0.0.0.0" || a.ip == "::"; }

}  // namespace

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

Status Engine::Start(const EngineAddress &local) {
  local_ = local;
  name_ = local.ToString();
  host_ = LocalHostIdentity();
  if (!opts_.AllowsProtocol("tcp")) {
    HIXL_LOGW("Initialize %s: protocol_desc excludes tcp; links will need another transport", name_.c_str());
  }
  for (uint32_t i = 0; i < opts_.io_threads; ++i) {
    workers_.push_back(std::make_unique<tcp::IoWorker>("hixl-io" + std::to_string(i)));
    if (!workers_.back()->Start()) return FAILED;
  }
  std::string why;
  if (local.has_port && local.port > 0) {
    int fd = tcp::ListenTcp(local, &why);
    if (fd < 0) {
      HIXL_LOGE("Initialize %s: cannot listen: %s", name_.c_str(), why.c_str());
      return FAILED;
    }
    workers_[0]->Add(std::make_shared<tcp::Listener>(fd, &workers_, this), EPOLLIN);
    HIXL_LOGI("engine %s listening (%u I/O threads, %u streams per link)", name_.c_str(), opts_.io_threads,
              opts_.tcp_streams_per_link);
  } else if (!tcp::IsLocalIp(local, &why)) {
    HIXL_LOGE("Initialize %s: the address is not local to this host: %s", name_.c_str(), why.c_str());
    return FAILED;
  }
  return SUCCESS;
}

Engine::~Engine() { Shutdown(); }

void Engine::Shutdown() {
  if (stopping_.exchange(true)) return;
  std::map<std::string, std::shared_ptr<Link>> links;
  {
    std::lock_guard<std::mutex> lock(mu_);
    links.swap(links_);
  }
  for (auto &[name, link] : links) link->tcp->Close("engine is finalizing");
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
  if (s == SUCCESS) HIXL_LOGD("RegisterMem 0x%" PRIxPTR "+%zu -> %p", mem.addr, mem.len, handle);
  return s;
}

Status Engine::DeregisterMem(MemHandle handle) {
  if (handle == nullptr) {
    HIXL_LOGE("DeregisterMem: handle is null");
    return PARAM_INVALID;
  }
  registry_.Deregister(handle);
  return SUCCESS;
}

Status Engine::RemoteKey(const char *call, const std::string &remote, std::string *key, EngineAddress *addr) {
  EngineAddress a;
  std::string why;
  if (!ParseEngineAddress(remote, &a, &why)) {
    HIXL_LOGE("%s: remote_engine '%s' is malformed: %s", call, remote.c_str(), why.c_str());
    return PARAM_INVALID;
  }
  if (!a.has_port || a.port == 0) {
    HIXL_LOGE("%s: remote_engine '%s' has no port; a remote must be a server (ip:port)", call, remote.c_str());
    return PARAM_INVALID;
  }
  *key = a.ToString();
  if (addr != nullptr) *addr = a;
  return SUCCESS;
}

std::shared_ptr<Engine::Link> Engine::FindLink(const std::string &key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = links_.find(key);
  return it == links_.end() ? nullptr : it->second;
}

Status Engine::Connect(const std::string &remote, int32_t timeout_ms) {
  std::string key;
  EngineAddress addr;
  Status s = RemoteKey("Connect", remote, &key, &addr);
  if (s != SUCCESS) return s;
  if (timeout_ms <= 0) {
    HIXL_LOGE("Connect %s: timeout_in_millis=%d must be > 0", key.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  Deadline deadline = Deadline::AfterMillis(timeout_ms);
  {
    std::unique_lock<std::mutex> lock(mu_);
    // One connect per remote at a time; a second caller waits for the first.
    if (!connect_cv_.wait_until(lock, deadline.at(), [&] { return connecting_.count(key) == 0; })) {
      HIXL_LOGE("Connect %s: another Connect to it did not finish within %d ms", key.c_str(), timeout_ms);
      return TIMEOUT;
    }
    auto it = links_.find(key);
    if (it != links_.end()) {
      if (!it->second->tcp->broken()) {
        HIXL_LOGW("Connect %s: already connected", key.c_str());
        return ALREADY_CONNECTED;
      }
      HIXL_LOGI("Connect %s: replacing a broken link", key.c_str());
      links_.erase(it);
    }
    if (stopping_) return FAILED;
    connecting_.insert(key);
  }
  auto link = std::make_shared<Link>();
  link->name = key;
  if (!opts_.AllowsProtocol("tcp")) {
    HIXL_LOGE("Connect %s: no transport that protocol_desc allows reaches it (only tcp is built)", key.c_str());
    s = FAILED;
  } else {
    tcp::LinkParams params;
    params.local_name = name_;
    params.remote = addr;
    params.streams = opts_.tcp_streams_per_link;
    params.host = host_;
    wire::HelloAck ack;
    s = tcp::TcpLink::Open(params, workers_, deadline, &link->tcp, &ack);
    if (s == SUCCESS) link->remote_regions.Replace(std::move(ack.regions));
  }
  std::lock_guard<std::mutex> lock(mu_);
  connecting_.erase(key);
  connect_cv_.notify_all();
  if (s != SUCCESS) return s;
  if (stopping_) {
    link->tcp->Close("engine is finalizing");
    return FAILED;
  }
  links_[key] = link;
  HIXL_LOGI("Connect %s: link up over tcp with %u stream(s)", key.c_str(), opts_.tcp_streams_per_link);
  return SUCCESS;
}

Status Engine::Disconnect(const std::string &remote, int32_t timeout_ms) {
  std::string key;
  Status s = RemoteKey("Disconnect", remote, &key);
  if (s != SUCCESS) return s;
  if (timeout_ms <= 0) {
    HIXL_LOGE("Disconnect %s: timeout_in_millis=%d must be > 0", key.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  std::shared_ptr<Link> link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(key);
    if (it == links_.end()) {
      HIXL_LOGE("Disconnect %s: not connected", key.c_str());
      return NOT_CONNECTED;
    }
    link = it->second;
    links_.erase(it);
  }
  // Closing fails what is in flight; the remote sees the streams end and
  // releases its side.
  link->tcp->Close("disconnected by the user");
  HIXL_LOGI("Disconnect %s: done", key.c_str());
  return SUCCESS;
}

Status Engine::RefreshRemoteRegions(Link &link, Deadline deadline) {
  auto done = std::make_shared<Completion>();
  auto result = std::make_shared<std::vector<uint8_t>>();
  auto req = tcp::MakeRequest(wire::MsgType::kRegionsReq, {}, done);
  req->on_reply = [result](std::vector<uint8_t> &&body) { *result = std::move(body); };
  link.tcp->SubmitControl(std::move(req));
  Status s = Finish(link, done, deadline);
  if (s != SUCCESS) return s;
  std::vector<wire::RegionInfo> regions;
  if (!wire::DecodeRegions(result->data(), result->size(), &regions)) {
    HIXL_LOGE("%s: malformed region table from the peer", link.name.c_str());
    return FAILED;
  }
  link.remote_regions.Replace(std::move(regions));
  return SUCCESS;
}

Status Engine::PrepareBatch(Link &link, TransferOp op, const std::vector<TransferOpDesc> &descs, Deadline deadline,
                            PinSet *pins, std::vector<tcp::Piece> *pieces) {
  auto table = registry_.Snapshot();
  const bool pool_on = opts_.buffer_pool_count > 0;
  bool refreshed = false;
  RegionTable::Ref hint = nullptr;
  pieces->reserve(descs.size());
  for (size_t i = 0; i < descs.size(); ++i) {
    const TransferOpDesc &d = descs[i];
    if (d.len == 0 || d.local_addr + d.len < d.local_addr || d.remote_addr + d.len < d.remote_addr ||
        d.local_addr == 0) {
      HIXL_LOGE("Transfer %s %s: descriptor %zu (local=0x%" PRIxPTR " remote=0x%" PRIxPTR
                " len=%zu) is empty, null or wraps around",
                OpName(op), link.name.c_str(), i, d.local_addr, d.remote_addr, d.len);
      return PARAM_INVALID;
    }
    RegionTable::Ref r = table->Find(d.local_addr, d.len, hint);
    if (r != nullptr) {
      if (r != hint && !pins->Add(*r)) r = nullptr;  // deregistered just now
      hint = r;
    }
    if (r == nullptr && !pool_on) {
      HIXL_LOGE("Transfer %s %s: descriptor %zu local range 0x%" PRIxPTR "+%zu is not inside a registered region "
                "(and the buffer pool is off)",
                OpName(op), link.name.c_str(), i, d.local_addr, d.len);
      return PARAM_INVALID;
    }
    if (!link.remote_regions.Contains(d.remote_addr, d.len)) {
      // Maybe registered at the remote after our copy was taken: ask again, once per batch.
      if (!refreshed) {
        refreshed = true;
        Status s = RefreshRemoteRegions(link, deadline);
        if (s != SUCCESS) return s;
      }
      if (!link.remote_regions.Contains(d.remote_addr, d.len)) {
        HIXL_LOGE("Transfer %s %s: descriptor %zu remote range 0x%" PRIxPTR "+%zu is outside every region "
                  "registered at the remote; nothing of the batch was moved",
                  OpName(op), link.name.c_str(), i, d.remote_addr, d.len);
        return PARAM_INVALID;
      }
    }
    pieces->push_back({d.local_addr, d.remote_addr, d.len});
  }
  return SUCCESS;
}

Status Engine::Finish(Link &link, const std::shared_ptr<Completion> &done, Deadline deadline) {
  Status s = done->Wait(deadline);
  if (s == SUCCESS) return s;
  link.tcp->Cancel(done.get());
  // Cancel stops every part; one may have completed meanwhile, in which case
  // the completion's own verdict stands.
  done->Finish(s);
  Status final_status = s;
  done->Poll(&final_status);
  return final_status;
}

Status Engine::TransferSync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                            int32_t timeout_ms) {
  std::string key;
  Status s = RemoteKey("TransferSync", remote, &key);
  if (s != SUCCESS) return s;
  if (op != READ && op != WRITE) {
    HIXL_LOGE("TransferSync %s: unknown operation %d", key.c_str(), static_cast<int>(op));
    return PARAM_INVALID;
  }
  if (timeout_ms <= 0) {
    HIXL_LOGE("TransferSync %s: timeout_in_millis=%d must be > 0", key.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  if (descs.empty()) return SUCCESS;
  Deadline deadline = Deadline::AfterMillis(timeout_ms);
  auto link = FindLink(key);
  if (link == nullptr) {
    HIXL_LOGE("TransferSync %s %s: not connected", OpName(op), key.c_str());
    return NOT_CONNECTED;
  }
  if (link->tcp->broken()) {
    HIXL_LOGE("TransferSync %s %s: the link is broken (peer gone?); Disconnect and Connect again", OpName(op),
              key.c_str());
    return FAILED;
  }
  PinSet pins;
  std::vector<tcp::Piece> pieces;
  s = PrepareBatch(*link, op, descs, deadline, &pins, &pieces);
  if (s != SUCCESS) return s;
  auto done = std::make_shared<Completion>();
  link->tcp->SubmitTransfer(op == WRITE, pieces.data(), pieces.size(), done);
  s = Finish(*link, done, deadline);
  if (s == TIMEOUT) {
    HIXL_LOGE("TransferSync %s %s: %zu descriptor(s) not done within %d ms", OpName(op), key.c_str(), descs.size(),
              timeout_ms);
  } else if (s != SUCCESS) {
    HIXL_LOGE("TransferSync %s %s: failed with status %u", OpName(op), key.c_str(), s);
  }
  return s;
}

Status Engine::SendNotify(const std::string &remote, const NotifyDesc &notify, int32_t timeout_ms) {
  std::string key;
  Status s = RemoteKey("SendNotify", remote, &key);
  if (s != SUCCESS) return s;
  if (timeout_ms <= 0) {
    HIXL_LOGE("SendNotify %s: timeout_in_millis=%d must be > 0", key.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  if (notify.name.GetLength() > wire::kMaxNotifyField || notify.notify_msg.GetLength() > wire::kMaxNotifyField) {
    HIXL_LOGE("SendNotify %s: name is %zu bytes and notify_msg %zu bytes; each may have at most %zu", key.c_str(),
              notify.name.GetLength(), notify.notify_msg.GetLength(), wire::kMaxNotifyField);
    return PARAM_INVALID;
  }
  auto link = FindLink(key);
  if (link == nullptr) {
    HIXL_LOGE("SendNotify %s: not connected", key.c_str());
    return NOT_CONNECTED;
  }
  wire::Notify n;
  n.name.assign(notify.name.GetString(), notify.name.GetLength());
  n.msg.assign(notify.notify_msg.GetString(), notify.notify_msg.GetLength());
  std::vector<uint8_t> body;
  wire::EncodeNotify(n, &body);
  auto done = std::make_shared<Completion>();
  link->tcp->SubmitControl(tcp::MakeRequest(wire::MsgType::kNotifyReq, std::move(body), done));
  s = Finish(*link, done, Deadline::AfterMillis(timeout_ms));
  if (s != SUCCESS) HIXL_LOGE("SendNotify %s: name '%s' failed with status %u", key.c_str(), n.name.c_str(), s);
  return s;
}

Status Engine::GetNotifies(std::vector<NotifyDesc> &notifies) {
  notifies = inbox_.Drain();
  return SUCCESS;
}

Status Engine::OnHello(const wire::Hello &hello, wire::HelloAck *ack) {
  ack->target = name_;
  ack->host = host_;
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

Status Engine::OnNotify(uint64_t link_key, wire::Notify &&notify) {
  return inbox_.Push(link_key, std::move(notify.name), std::move(notify.msg));
}

}  // namespace hixl
