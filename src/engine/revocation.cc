#include "engine/revocation.h"

#include <vector>

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
  if (it != waiting_.end() && it->second > 0 && --it->second == 0) cv_.notify_all();
}

bool Revocation::RevokeEverywhere(const wire::RegionInfo &region, std::chrono::milliseconds limit) {
  std::vector<std::shared_ptr<tcp::TargetStream>> streams;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &[raw, weak] : peers_) {
      if (auto s = weak.lock()) streams.push_back(std::move(s));
    }
    if (streams.empty()) return true;
    id = next_id_++;
    waiting_[id] = streams.size();
  }
  // Each stream belongs to one worker thread: hand the push to it.
  for (auto &s : streams) {
    // A worker that has stopped (Finalize) closed its streams: as good as
    // an acknowledgement.
    if (!s->worker()->Post([s, id, region] { s->PushRevoke(id, region); })) OnAck(id);
  }
  std::unique_lock<std::mutex> lock(mu_);
  bool done = cv_.wait_for(lock, limit, [&] { return waiting_[id] == 0; });
  if (!done) {
    HIXL_LOGE("DeregisterMem: %zu of %zu peer(s) did not acknowledge revoking region 0x%llx+%llu within %lld ms; "
              "closing their links",
              waiting_[id], streams.size(), static_cast<unsigned long long>(region.addr),
              static_cast<unsigned long long>(region.len), static_cast<long long>(limit.count()));
  }
  waiting_.erase(id);
  lock.unlock();
  if (!done) {
    // A peer that still holds the region in its table must not keep its
    // link: once the link is gone, a live peer stops copying and, to go on,
    // connects again and gets the table without the region.
    for (auto &s : streams) {
      s->worker()->Post([s, id] { s->CloseIfRevokePending(id); });
    }
  }
  return done;
}

}  // namespace hixl
