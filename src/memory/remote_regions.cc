#include "memory/remote_regions.h"

#include <algorithm>
#include <mutex>

#include "memory/range_search.h"

namespace hixl {

void RemoteRegions::RebuildLocked() {
  std::sort(regions_.begin(), regions_.end(),
            [](const auto &a, const auto &b) { return a.addr != b.addr ? a.addr < b.addr : a.len < b.len; });
  MaxEndsLocked();
}

void RemoteRegions::MaxEndsLocked() {
  max_end_.clear();
  max_end_.reserve(regions_.size());
  uint64_t m = 0;
  for (const auto &r : regions_) {
    m = std::max(m, r.addr + r.len);
    max_end_.push_back(m);
  }
}

void RemoteRegions::Replace(std::vector<wire::RegionInfo> regions, uint64_t order) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (order < table_order_) return;  // a newer table is in place
  table_order_ = order;
  // (Revocations too may be applied out of order: not sorted.)
  tombstones_.erase(std::remove_if(tombstones_.begin(), tombstones_.end(),
                                   [order](const auto &t) { return t.first <= order; }),
                    tombstones_.end());
  // What was revoked after this table was sent is not in it any more.
  for (const auto &tombstone : tombstones_) {
    const wire::RegionInfo &gone = tombstone.second;  // (clang 14 cannot capture a structured binding)
    regions.erase(std::remove_if(regions.begin(), regions.end(),
                                 [&](const wire::RegionInfo &r) { return r.addr == gone.addr && r.len == gone.len; }),
                  regions.end());
  }
  regions_ = std::move(regions);
  RebuildLocked();
}

void RemoteRegions::Revoke(uint64_t addr, uint64_t len, uint64_t order) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  // A table sent after the revocation reflects it already (it holds the
  // region only if it was registered again since).
  if (order < table_order_) return;
  regions_.erase(std::remove_if(regions_.begin(), regions_.end(),
                                [&](const wire::RegionInfo &r) { return r.addr == addr && r.len == len; }),
                 regions_.end());
  if (order > table_order_) {
    tombstones_.emplace_back(order, wire::RegionInfo{addr, len});
    if (tombstones_.size() > kMaxTombstones) tombstones_.pop_front();
  }
  MaxEndsLocked();  // (still sorted: every peer hears of every deregistration, so keep this linear)
}

void RemoteRegions::WaitForHolds() { std::unique_lock<std::shared_mutex> lock(mu_); }

bool RemoteRegions::Contains(uint64_t addr, uint64_t len) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return ContainsLocked(addr, len);
}

bool RemoteRegions::Find(uint64_t addr, uint64_t len, wire::RegionInfo *region) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  size_t i = FindLocked(addr, len);
  if (i == SIZE_MAX) return false;
  *region = regions_[i];
  return true;
}

size_t RemoteRegions::FindLocked(uint64_t addr, uint64_t len) const {
  return FindContaining(
      regions_, max_end_, addr, len, [](const wire::RegionInfo &r) { return r.addr; },
      [](const wire::RegionInfo &r, uint64_t a, uint64_t n) { return a >= r.addr && n <= r.len && a - r.addr <= r.len - n; });
}

}  // namespace hixl
