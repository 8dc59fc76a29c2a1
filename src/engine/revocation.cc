#include "engine/revocation.h"

#include "common/log.h"

namespace hixl {

void Revocation::AddPeer(const std::shared_ptr<tcp::TargetStream> &stream) {
  std::lock_guard<std::mutex> lock(mu_);
  peers_[stream.get()] = stream;
}

void Revocation::RemovePeer(tcp::TargetStream *stream) {
  std::lock_guard<std::mutex> lock(mu_);
  peers_.erase(stream);
}

void Revocation::OnAck(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = waiting_.find(id);
  if (it != waiting_.end() && it->second->due > 0 && --it->second->due == 0) cv_.notify_all();
}

uint64_t Revocation::Start(const wire::RegionInfo &region) {
  std::vector<std::shared_ptr<tcp::TargetStream>> streams;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &[raw, weak] : peers_) {
      if (auto s = weak.lock()) streams.push_back(std::move(s));
    }
    id = next_id_++;
    auto p = std::make_shared<Pending>();
    p->region = region;
    p->due = streams.size();
    for (const auto &s : streams) p->streams.push_back(s);
    waiting_[id] = std::move(p);
  }
  // Each stream belongs to one worker thread: hand the push to it.
  for (auto &s : streams) {
    // A worker that has stopped (Finalize) closed its streams: as good as
    // an acknowledgement (the copies are the peer's, but it is too late to
    // wait for them then).
    if (!s->worker()->Post([s, id, region] { s->PushRevoke(id, region); })) OnAck(id);
  }
  return id;
}

bool Revocation::Wait(uint64_t id, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return forgotten_.count(id) == 0;  // confirmed (and erased) meanwhile, or given up on
  const std::shared_ptr<Pending> p = it->second;
  auto forgotten = [&] { return forgotten_.count(id) != 0; };
  if (cv_.wait_for(lock, limit, [&] { return p->due == 0 || forgotten(); }) && p->due == 0) {
    it = waiting_.find(id);
    if (it != waiting_.end() && it->second == p) waiting_.erase(it);
    return true;
  }
  if (forgotten()) return false;  // given up on elsewhere (Finalize)
  HIXL_LOGE("revoking region 0x%llx+%llu: %zu of %zu peer(s) on this host did not confirm within %lld ms that they "
            "stopped copying into it; hanging up on them, and the region stays unconfirmed until they close their "
            "end or exit",
            static_cast<unsigned long long>(p->region.addr), static_cast<unsigned long long>(p->region.len), p->due,
            p->streams.size(), static_cast<long long>(limit.count()));
  // A peer that still holds the region in its table must not keep its
  // link: once the link is gone, a live peer stops copying and, to go on,
  // connects again and gets the table without the region.
  for (const auto &weak : p->streams) {
    if (auto s = weak.lock()) s->worker()->Post([s, id] { s->HangUpIfRevokePending(id); });
  }
  return false;
}

void Revocation::Forget(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return;  // confirmed
  forgotten_.insert(id);
  waiting_.erase(it);
  cv_.notify_all();
}

}  // namespace hixl
