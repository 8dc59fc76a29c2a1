#include "memory/remote_regions.h"

#include <algorithm>
#include <map>

#include "memory/range_search.h"

namespace hixl {
namespace {

bool SameSections(const wire::Sections &a, const wire::Sections &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].bytes != b[i].bytes) return false;
  }
  return true;
}

}  // namespace

RemoteTable::RemoteTable(std::vector<std::shared_ptr<const RemoteRegion>> regions, bool sorted)
    : regions_(std::move(regions)) {
  if (!sorted) {
    std::sort(regions_.begin(), regions_.end(), [](const auto &a, const auto &b) {
      return a->range.addr != b->range.addr ? a->range.addr < b->range.addr : a->range.len < b->range.len;
    });
  }
  max_end_.reserve(regions_.size());
  uint64_t m = 0;
  for (const auto &r : regions_) {
    m = std::max(m, r->end());
    max_end_.push_back(m);
  }
}

size_t RemoteTable::IndexOf(uint64_t addr, uint64_t len) const {
  return FindContaining(
      regions_, max_end_, addr, len, [](const auto &r) { return r->range.addr; },
      [](const auto &r, uint64_t a, uint64_t n) { return r->Contains(a, n); });
}

const RemoteRegion *RemoteTable::Find(uint64_t addr, uint64_t len) const {
  size_t i = IndexOf(addr, len);
  return i == SIZE_MAX ? nullptr : regions_[i].get();
}

std::shared_ptr<const RemoteRegion> RemoteTable::FindShared(uint64_t addr, uint64_t len) const {
  size_t i = IndexOf(addr, len);
  return i == SIZE_MAX ? nullptr : regions_[i];
}

RemoteRegions::RemoteRegions() : table_(std::make_shared<RemoteTable>()) {}

void RemoteRegions::Replace(std::vector<wire::RegionEntry> entries, uint64_t order) {
  std::shared_ptr<const RemoteTable> old;
  {
    ReaderLock lock(&mu_);
    old = table_;
  }
  // Built outside the lock (a table may hold 65536 entries); applied below
  // only if nothing newer came meanwhile.
  std::map<std::pair<uint64_t, uint64_t>, const std::shared_ptr<const RemoteRegion> *> before;
  for (const auto &r : old->regions()) before[{r->range.addr, r->range.len}] = &r;
  std::vector<std::shared_ptr<const RemoteRegion>> regions;
  regions.reserve(entries.size());
  for (auto &e : entries) {
    auto it = before.find({e.range.addr, e.range.len});
    if (it != before.end() && (*it->second)->kind == e.kind && SameSections((*it->second)->sections, e.sections)) {
      regions.push_back(*it->second);
    } else {
      regions.push_back(std::make_shared<const RemoteRegion>(RemoteRegion{e.range, e.kind, std::move(e.sections)}));
    }
  }
  WriterLock lock(&mu_);
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
                                 [&](const auto &r) { return r->range.addr == gone.addr && r->range.len == gone.len; }),
                  regions.end());
  }
  table_ = std::make_shared<const RemoteTable>(std::move(regions));
}

void RemoteRegions::Revoke(uint64_t addr, uint64_t len, uint64_t order) {
  WriterLock lock(&mu_);
  // A table sent after the revocation reflects it already (it holds the
  // region only if it was registered again since).
  if (order < table_order_) return;
  if (order > table_order_) {
    tombstones_.emplace_back(order, wire::RegionInfo{addr, len});
    if (tombstones_.size() > kMaxTombstones) tombstones_.pop_front();
  }
  const auto &regions = table_->regions();
  auto gone = [&](const auto &r) { return r->range.addr == addr && r->range.len == len; };
  if (std::none_of(regions.begin(), regions.end(), gone)) return;
  // Every peer hears of every deregistration: keep this linear (what is
  // left stays sorted).
  std::vector<std::shared_ptr<const RemoteRegion>> rest;
  rest.reserve(regions.size());
  for (const auto &r : regions) {
    if (!gone(r)) rest.push_back(r);
  }
  table_ = std::make_shared<const RemoteTable>(std::move(rest), /*sorted=*/true);
}

void RemoteRegions::WaitForHolds() {
  WriterLock wait_for_holds(&mu_);  // taken and let go: no Hold was alive in between
}

bool RemoteRegions::Contains(uint64_t addr, uint64_t len) const {
  ReaderLock lock(&mu_);
  return table_->Find(addr, len) != nullptr;
}

std::shared_ptr<const RemoteTable> RemoteRegions::Snapshot() const {
  ReaderLock lock(&mu_);
  return table_;
}

std::vector<std::shared_ptr<const RemoteRegion>> RemoteRegions::Regions() const {
  return Snapshot()->regions();  // (copied before the snapshot goes)
}

std::shared_ptr<const RemoteRegion> RemoteRegions::Live(const RemoteRegion *entry) const {
  ReaderLock lock(&mu_);
  const auto &all = table_->regions();
  auto pos = std::lower_bound(all.begin(), all.end(), entry->range.addr,
                              [](const std::shared_ptr<const RemoteRegion> &r, uint64_t a) { return r->range.addr < a; });
  for (; pos != all.end() && (*pos)->range.addr == entry->range.addr; ++pos) {
    if (pos->get() == entry) return *pos;
  }
  return nullptr;
}

}  // namespace hixl
