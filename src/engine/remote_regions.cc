#include "engine/remote_regions.h"

#include <algorithm>

#include "memory/range_search.h"

namespace hixl {

void RemoteRegions::Replace(std::vector<wire::RegionInfo> regions) {
  std::sort(regions.begin(), regions.end(),
            [](const auto &a, const auto &b) { return a.addr != b.addr ? a.addr < b.addr : a.len < b.len; });
  std::vector<uint64_t> max_end;
  max_end.reserve(regions.size());
  uint64_t m = 0;
  for (const auto &r : regions) {
    m = std::max(m, r.addr + r.len);
    max_end.push_back(m);
  }
  std::lock_guard<std::mutex> lock(mu_);
  regions_ = std::move(regions);
  max_end_ = std::move(max_end);
}

bool RemoteRegions::Contains(uint64_t addr, uint64_t len) const {
  std::lock_guard<std::mutex> lock(mu_);
  return FindContaining(
             regions_, max_end_, addr, len, [](const wire::RegionInfo &r) { return r.addr; },
             [](const wire::RegionInfo &r, uint64_t a, uint64_t n) {
               return a >= r.addr && n <= r.len && a - r.addr <= r.len - n;
             }) != SIZE_MAX;
}

}  // namespace hixl
