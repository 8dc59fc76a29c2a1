// engine_connect.cc: links to remote engines: Connect and Disconnect, their
// async versions on the connect pool, auto-connect, heartbeats.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "engine/engine.h"

namespace hixl {

Status Engine::RemoteKey(const char *call, const std::string &remote, std::string *key, EngineAddress *addr) {
  // Callers name the same remote call after call: remember the last answer
  // (per thread, since it depends on nothing but the string).
  struct Last {
    std::string remote, key;
    EngineAddress addr;
  };
  thread_local Last last;
  if (!last.remote.empty() && last.remote == remote) {
    *key = last.key;
    if (addr != nullptr) *addr = last.addr;
    return SUCCESS;
  }
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
  last = Last{remote, *key, a};
  return SUCCESS;
}

Status Engine::CheckTimeout(const char *call, const std::string &key, int32_t timeout_ms) {
  if (timeout_ms > 0) return SUCCESS;
  HIXL_LOGE("%s %s: timeout_in_millis=%d must be > 0", call, key.c_str(), timeout_ms);
  return PARAM_INVALID;
}

void Engine::CloseLinks(std::vector<std::shared_ptr<Link>> &links, const char *why) {
  for (auto &l : links) l->Close(why);
  links.clear();
}

Status Engine::OpenLink(const std::string &key, const EngineAddress &addr, Deadline deadline, LinkRef *out) {
  std::vector<std::shared_ptr<Link>> stale;
  {
    UniqueLock lock(&connect_mu_);
    // One connect per remote at a time; a second caller waits for the first.
    if (!connect_cv_.WaitUntil(lock, deadline.at(),
                               [&]() REQUIRES(connect_mu_) { return connecting_.count(key) == 0 || stopping_; })) {
      HIXL_LOGE("Connect %s: another connect to it did not finish in time", key.c_str());
      return TIMEOUT;
    }
    LinkRef current = links_.Acquire(key);
    if (current && !current->broken()) {
      if (out != nullptr) *out = std::move(current);
      return ALREADY_CONNECTED;
    }
    if (current) {
      HIXL_LOGI("Connect %s: replacing a broken link", key.c_str());
      if (auto old = links_.Remove(key, &*current)) stale.push_back(old);
    }
    if (stopping_) return FAILED;
    connecting_.insert(key);
  }
  CloseLinks(stale, "replaced by a new link");

  auto link = std::make_shared<Link>();
  link->name = key;
  ControlLink::Params params;
  params.local_name = name_;
  params.remote = addr;
  params.heartbeat_ms = opts_.heartbeat_ms;
  params.host = host_;
  params.offers = offers_;
  params.regions = link->remote_regions;
  params.cancel = &stopping_;
  params.auth = auth_;
  params.before_revoke_ack = [seam = link->revoke_seam](const wire::RegionInfo &region, std::function<void()> ack) {
    seam->BeforeRevokeAck(region, std::move(ack));
  };
  wire::HelloAck ack;
  std::string why;
  Status s = ControlLink::Open(params, workers_, deadline, &link->control, &ack, &why);
  if (s != SUCCESS) {
    HIXL_LOGE("Connect %s: %s", key.c_str(), why.c_str());
  } else {
    s = ChooseTransport(*link, addr, ack, deadline);
  }
  // In use from before it is in the table: the channel pool, making room
  // for another thread's link, never closes it before our caller has it.
  LinkRef mine(link);
  if (s == SUCCESS) {
    // The target learns which transport carries the data: one that does not
    // copy into its memory itself need not be waited for by revocations as
    // one that does (nor keep its stream after it ends it).
    link->control->SayUsing(link->transport->wire_id());
    link->Touch();
    std::vector<std::shared_ptr<Link>> evicted;
    s = links_.Insert(link, &evicted);
    CloseLinks(evicted, "closed by the channel pool (idle)");
    if (s != SUCCESS) link->Close("the channel pool is full");
  } else if (link->control) {
    link->Close("no transport");
  }
  {
    MutexLock lock(&connect_mu_);
    connecting_.erase(key);
    connect_cv_.NotifyAll();
  }
  if (s == SUCCESS && stopping_) {
    // Shutdown may have emptied the table before we added to it.
    if (auto l = links_.Remove(key, link.get())) l->Close("engine is finalizing");
    return FAILED;
  }
  if (s == SUCCESS) {
    HIXL_LOGI("Connect %s: link up; data over %s", key.c_str(), link->transport->name());
    if (out != nullptr) *out = std::move(mine);
  }
  return s;
}

Status Engine::ChooseTransport(Link &link, const EngineAddress &addr, const wire::HelloAck &ack, Deadline deadline) {
  PeerView peer;
  peer.name = link.name;
  peer.host = ack.host;
  peer.sections = &ack.answers;
  peer.control_fd = link.control->fd();
  LinkSetup setup;
  setup.remote = addr;
  setup.link_nonce = link.control->link_nonce();
  setup.regions = link.remote_regions.get();
  setup.control = link.control.get();
  // What the transport must reach: the kinds of the peer's memory now (our
  // own memory of a kind its channel does not take, the engine stages).
  // (A peer with nothing registered yet is taken for one with host memory.)
  MemKinds kinds = 0;
  for (const auto &r : link.remote_regions->Regions()) kinds |= MemKindBit(r->kind);
  if (kinds == 0) kinds = kHostOnly;
  std::string reasons;
  for (size_t i = 0; i < transports_.size(); ++i) {
    Transport &t = *transports_[i];
    std::string why;
    if (!t.CanReach(peer, kinds, &why)) {
      HIXL_LOGI("link to %s: not using %s: %s", link.name.c_str(), t.name(), why.c_str());
      reasons += std::string(reasons.empty() ? "" : "; ") + t.name() + ": " + why;
      continue;
    }
    std::unique_ptr<Channel> channel;
    Status s = t.Connect(peer, setup, deadline, &channel, &why);
    if (s == SUCCESS) {
      link.channel = std::move(channel);
      link.transport = &t;
      link.revoke_seam->Set(link.channel.get());
      HIXL_LOGI("link to %s uses %s", link.name.c_str(), t.name());
      return SUCCESS;
    }
    reasons += std::string(reasons.empty() ? "" : "; ") + t.name() + ": " + why;
    if (s == TIMEOUT || deadline.Expired()) {
      HIXL_LOGE("Connect %s: %s did not connect in time: %s", link.name.c_str(), t.name(), why.c_str());
      return TIMEOUT;
    }
    // It could reach the peer and failed: worth a warning when another
    // transport takes over (the user may have expected this one).
    if (i + 1 < transports_.size()) {
      HIXL_LOGW("link to %s: not using %s: %s; trying %s", link.name.c_str(), t.name(), why.c_str(),
                transports_[i + 1]->name());
    }
  }
  HIXL_LOGE("Connect %s: no transport protocol_desc allows reaches it (%s)", link.name.c_str(),
            reasons.empty() ? "none is available" : reasons.c_str());
  return FAILED;
}

Status Engine::Connect(const std::string &remote, int32_t timeout_ms) {
  std::string key;
  EngineAddress addr;
  Status s = RemoteKey("Connect", remote, &key, &addr);
  if (s != SUCCESS) return s;
  if ((s = CheckTimeout("Connect", key, timeout_ms)) != SUCCESS) return s;
  s = OpenLink(key, addr, Deadline::AfterMillis(timeout_ms));
  if (s == ALREADY_CONNECTED) HIXL_LOGW("Connect %s: already connected", key.c_str());
  return s;
}

Status Engine::Disconnect(const std::string &remote, int32_t timeout_ms) {
  std::string key;
  Status s = RemoteKey("Disconnect", remote, &key);
  if (s != SUCCESS) return s;
  if ((s = CheckTimeout("Disconnect", key, timeout_ms)) != SUCCESS) return s;
  bool evicted = false;
  auto link = links_.Remove(key, nullptr, &evicted);
  if (link == nullptr) {
    if (evicted) return SUCCESS;  // the channel pool closed it already
    HIXL_LOGE("Disconnect %s: not connected", key.c_str());
    return NOT_CONNECTED;
  }
  // Closing fails what is in flight; the remote sees the streams end and
  // releases its side.
  link->Close("disconnected by the user");
  HIXL_LOGI("Disconnect %s: done", key.c_str());
  return SUCCESS;
}

Status Engine::UseLink(const char *call, const std::string &key, Deadline deadline, LinkRef *out) {
  if (stopping_) {  // a call racing Finalize (the channels refuse work too, should one slip past)
    HIXL_LOGE("%s %s: the engine is finalizing", call, key.c_str());
    return FAILED;
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool evicted = false;
    LinkRef ref = links_.Acquire(key, &evicted);
    if (ref && !ref->broken()) {
      *out = std::move(ref);
      return SUCCESS;
    }
    if (ref) {
      if (!opts_.auto_connect) {
        HIXL_LOGE("%s %s: the link is broken (peer gone?); Disconnect and Connect again, or use AutoConnect", call,
                  key.c_str());
        return FAILED;
      }
      std::vector<std::shared_ptr<Link>> stale;
      if (auto old = links_.Remove(key, &*ref)) stale.push_back(old);
      ref.Reset();
      CloseLinks(stale, "broken; reconnecting");
    } else if (!opts_.auto_connect && !evicted) {
      HIXL_LOGE("%s %s: not connected", call, key.c_str());
      return NOT_CONNECTED;
    }
    EngineAddress addr;
    std::string why;
    ParseEngineAddress(key, &addr, &why);  // canonical already
    HIXL_LOGI("%s %s: connecting first", call, key.c_str());
    LinkRef fresh;
    Status s = OpenLink(key, addr, deadline, &fresh);
    if (s != SUCCESS && s != ALREADY_CONNECTED) return s;  // (OpenLink logged why)
    if (fresh && !fresh->broken()) {
      *out = std::move(fresh);
      return SUCCESS;
    }
  }
  HIXL_LOGE("%s %s: the link broke again right after connecting", call, key.c_str());
  return FAILED;
}

void Engine::SetAsyncStatus(const std::string &key, uint64_t seq, AsyncConnectStatus status) {
  MutexLock lock(&connect_mu_);
  auto it = async_connect_.find(key);
  if (it == async_connect_.end() || it->second.seq != seq) return;  // a later task's now, or forgotten
  if (status == AsyncConnectStatus::NOT_CONNECT) {
    async_connect_.erase(it);  // what a remote never seen reads as: nothing to keep
  } else {
    it->second.status = status;
  }
}

void Engine::ForgetOldAsyncConnectsLocked() {
  // A server's clients may come and go for months: remember the latest
  // kMaxAsyncConnects remotes; finished tasks go first, oldest first.
  while (async_connect_.size() > kMaxAsyncConnects) {
    auto oldest = async_connect_.end();
    for (auto it = async_connect_.begin(); it != async_connect_.end(); ++it) {
      const AsyncConnectStatus st = it->second.status;
      const bool finished = st == AsyncConnectStatus::CONNECTED || st == AsyncConnectStatus::CONNECT_FAILED;
      if (finished && (oldest == async_connect_.end() || it->second.seq < oldest->second.seq)) oldest = it;
    }
    if (oldest == async_connect_.end()) return;  // all pending: bounded by the pool's queue
    async_connect_.erase(oldest);
  }
}

Status Engine::QueueConnectTask(const char *call, const std::string &remote, int32_t timeout_ms, bool connect) {
  std::string key;
  Status s = RemoteKey(call, remote, &key);
  if (s != SUCCESS) return s;
  if ((s = CheckTimeout(call, key, timeout_ms)) != SUCCESS) return s;
  bool queued;
  {
    // Status, submission and (if the queue is full) roll-back under one lock:
    // a task of an earlier call finishing in between could otherwise have its
    // result overwritten by the roll-back.
    MutexLock lock(&connect_mu_);
    const uint64_t seq = ++async_seq_;
    auto it = async_connect_.find(key);
    const bool had_previous = it != async_connect_.end();
    AsyncConnectEntry previous;
    if (had_previous) previous = it->second;
    async_connect_[key] = {seq, connect ? AsyncConnectStatus::CONNECT_PENDING : AsyncConnectStatus::DISCONNECT_PENDING,
                           remote};
    ForgetOldAsyncConnectsLocked();
    // Pool tasks run without the pool's lock and take connect_mu_ themselves:
    // submitting under connect_mu_ cannot deadlock.
    queued = connect_pool_.Submit(key, [this, key, seq, timeout_ms, connect] {
      SetAsyncStatus(key, seq, connect ? AsyncConnectStatus::CONNECTING : AsyncConnectStatus::DISCONNECTING);
      if (connect) {
        Status r = Connect(key, timeout_ms);
        SetAsyncStatus(key, seq,
                       r == SUCCESS || r == ALREADY_CONNECTED ? AsyncConnectStatus::CONNECTED
                                                             : AsyncConnectStatus::CONNECT_FAILED);
      } else {
        Disconnect(key, timeout_ms);
        SetAsyncStatus(key, seq, AsyncConnectStatus::NOT_CONNECT);
      }
    });
    if (!queued) {
      if (had_previous) {
        async_connect_[key] = previous;
      } else {
        async_connect_.erase(key);
      }
    }
  }
  if (queued) return SUCCESS;
  if (stopping_) return FAILED;
  HIXL_LOGE("%s %s: the connect pool queue is full (connect_pool.task_queue_capacity=%u)", call, key.c_str(),
            opts_.connect_pool_queue);
  return RESOURCE_EXHAUSTED;
}

Status Engine::ConnectAsync(const std::string &remote, int32_t timeout_ms) {
  return QueueConnectTask("ConnectAsync", remote, timeout_ms, true);
}

Status Engine::DisconnectAsync(const std::string &remote, int32_t timeout_ms) {
  return QueueConnectTask("DisconnectAsync", remote, timeout_ms, false);
}

AsyncConnectStatus Engine::StillConnected(const std::string &key, AsyncConnectStatus st) {
  // A link that has since gone (peer died, pool closed it) is no longer connected.
  if (st == AsyncConnectStatus::CONNECTED) {
    LinkRef l = links_.Acquire(key);
    if (!l || l->broken()) st = AsyncConnectStatus::NOT_CONNECT;
  }
  return st;
}

Status Engine::GetAsyncConnectStatus(const std::string &remote, AsyncConnectStatus &status) {
  std::string key;
  Status s = RemoteKey("GetAsyncConnectStatus", remote, &key);
  if (s != SUCCESS) return s;
  AsyncConnectStatus st = AsyncConnectStatus::NOT_CONNECT;
  {
    MutexLock lock(&connect_mu_);
    auto it = async_connect_.find(key);
    if (it != async_connect_.end()) st = it->second.status;
  }
  status = StillConnected(key, st);
  return SUCCESS;
}

Status Engine::GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &statuses) {
  struct Seen {
    std::string key, given;  // given: as the caller of the latest task spelled the remote
    AsyncConnectStatus status;
  };
  std::vector<Seen> seen;
  {
    // Spelling and status from one look at the entry: a task queued in
    // between cannot pair a newer status with an older spelling.
    MutexLock lock(&connect_mu_);
    for (const auto &[key, entry] : async_connect_) seen.push_back({key, entry.given, entry.status});
  }
  statuses.clear();
  for (const auto &e : seen) statuses[AscendString(e.given.data(), e.given.size())] = StillConnected(e.key, e.status);
  return SUCCESS;
}

void Engine::Housekeeping() {
  const int64_t hb = opts_.heartbeat_ms;
  const auto tick = std::chrono::milliseconds(100);
  const auto hb_every = std::chrono::milliseconds(hb > 0 ? std::clamp<int64_t>(hb / 4, 100, 1000) : 1000);
  auto next_hb = std::chrono::steady_clock::now() + hb_every;
  UniqueLock lock(&house_mu_);
  while (!stopping_) {
    house_cv_.WaitFor(lock, tick, [this] { return stopping_.load(); });
    if (stopping_) break;
    lock.Unlock();
    async_.ExpireOverdue();
    std::vector<std::shared_ptr<Link>> idle;
    links_.Trim(&idle);
    CloseLinks(idle, "channel pool: above the high waterline");
    auto now = std::chrono::steady_clock::now();
    const bool beat = hb > 0 && now >= next_hb;
    if (beat) next_hb = now + hb_every;
    for (const auto &l : links_.All()) {
      if (l->control && l->channel && l->control->broken() && !l->channel->broken()) {
        // The peer died or dropped the link: with its control stream gone
        // the link hears no REVOKE, so its channel must carry nothing more,
        // and what it has in flight fails now (a UCX endpoint over shared
        // memory would wait for UCX's keepalive or the caller's deadline).
        l->Close("the control stream ended (the peer is gone)");
      } else if (beat && !l->broken() && !(l->control->CheckAlive(hb) && l->channel->CheckAlive(hb))) {
        l->Close("heartbeat: the peer stopped answering");
      }
    }
    lock.Lock();
  }
}

}  // namespace hixl
