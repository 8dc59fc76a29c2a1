#include "engine/revocation.h"

#include "common/log.h"

namespace hixl {

size_t Revocation::Pending::DirectOwing() const {
  size_t n = 0;
  for (const auto &[raw, entry] : owing) n += entry.second ? 1 : 0;
  return n;
}

void Revocation::AddPeer(const std::shared_ptr<ControlPeer> &stream, bool direct) {
  MutexLock lock(&mu_);
  Peer &peer = peers_[stream.get()];
  peer = Peer{};
  peer.stream = stream;
  peer.direct = direct;
}

void Revocation::SetIndirect(ControlPeer *stream) {
  MutexLock lock(&mu_);
  auto it = peers_.find(stream);
  if (it != peers_.end()) it->second.direct = false;
}

void Revocation::RemovePeer(ControlPeer *stream) {
  MutexLock lock(&mu_);
  peers_.erase(stream);
}

void Revocation::OnAck(uint64_t id, ControlPeer *stream) {
  MutexLock lock(&mu_);
  auto peer = peers_.find(stream);
  if (peer != peers_.end() && peer->second.told.erase(id) > 0) peer->second.late = false;
  auto it = waiting_.find(id);
  if (it != waiting_.end() && it->second->owing.erase(stream) > 0) cv_.NotifyAll();
}

uint64_t Revocation::Start(const wire::RegionInfo &region, bool tell_tcp) {
  std::vector<std::shared_ptr<ControlPeer>> streams;
  uint64_t id;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    auto p = std::make_shared<Pending>();
    p->region = region;
    for (auto &[raw, peer] : peers_) {
      if (!peer.direct && (!tell_tcp || peer.told.size() >= kMaxTcpUnanswered)) continue;
      auto s = peer.stream.lock();
      if (s == nullptr) continue;
      p->owing[raw] = {s, peer.direct};
      if (peer.direct) {
        ++p->direct_count;
      } else {
        peer.told.insert(id);
      }
      streams.push_back(std::move(s));
    }
    waiting_[id] = std::move(p);
  }
  // Each stream belongs to one worker thread: hand the push to it.
  for (auto &s : streams) {
    // A worker that has stopped (Finalize) closed its streams: as good as
    // an acknowledgement (the copies are the peer's, but it is too late to
    // wait for them then).
    if (!s->worker()->Post([s, id, region] { s->PushRevoke(id, region); })) OnAck(id, s.get());
  }
  return id;
}

void Revocation::WaitTcp(uint64_t id, std::chrono::milliseconds limit) {
  UniqueLock lock(&mu_);
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return;
  const std::shared_ptr<Pending> p = it->second;
  // The tcp peers still to answer that are not late (a closed one answered).
  auto awaited = [&]() REQUIRES(mu_) {
    std::vector<Peer *> out;
    for (const auto &[raw, entry] : p->owing) {
      auto peer = peers_.find(raw);
      if (!entry.second && peer != peers_.end() && !peer->second.late) out.push_back(&peer->second);
    }
    return out;
  };
  if (cv_.WaitFor(lock, limit, [&]() REQUIRES(mu_) { return awaited().empty() || forgotten_.count(id) != 0; })) return;
  const auto late = awaited();
  for (Peer *peer : late) peer->late = true;
  HIXL_LOGW("revoking region 0x%llx+%llu: %zu peer(s) over tcp did not answer within %lld ms; not waited for until "
            "they answer: meanwhile their batches into deregistered memory may move their other frames and end "
            "FAILED",
            static_cast<unsigned long long>(p->region.addr), static_cast<unsigned long long>(p->region.len),
            late.size(), static_cast<long long>(limit.count()));
}

bool Revocation::Wait(uint64_t id, std::chrono::milliseconds limit) {
  UniqueLock lock(&mu_);
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return forgotten_.count(id) == 0;  // confirmed (and erased) meanwhile, or given up on
  const std::shared_ptr<Pending> p = it->second;
  auto forgotten = [&]() REQUIRES(mu_) { return forgotten_.count(id) != 0; };
  if (cv_.WaitFor(lock, limit, [&]() REQUIRES(mu_) { return p->DirectOwing() == 0 || forgotten(); }) &&
      p->DirectOwing() == 0) {
    // (tcp peers still owing: their late answers find no entry, which is fine.)
    it = waiting_.find(id);
    if (it != waiting_.end() && it->second == p) waiting_.erase(it);
    return true;
  }
  if (forgotten()) return false;  // given up on elsewhere (Finalize)
  HIXL_LOGE("revoking region 0x%llx+%llu: %zu of %zu peer(s) on this host did not confirm within %lld ms that they "
            "stopped copying into it; hanging up on them, and the region stays unconfirmed until they close their "
            "end or exit",
            static_cast<unsigned long long>(p->region.addr), static_cast<unsigned long long>(p->region.len),
            p->DirectOwing(), p->direct_count, static_cast<long long>(limit.count()));
  // A peer that still holds the region in its table must not keep its
  // link: once the link is gone, a live peer stops copying and, to go on,
  // connects again and gets the table without the region.
  for (const auto &[raw, entry] : p->owing) {
    if (!entry.second) continue;
    if (auto s = entry.first.lock()) s->worker()->Post([s, id] { s->HangUpIfRevokePending(id); });
  }
  return false;
}

void Revocation::Forget(uint64_t id) {
  MutexLock lock(&mu_);
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return;  // confirmed
  forgotten_.insert(id);
  waiting_.erase(it);
  cv_.NotifyAll();
}

}  // namespace hixl
