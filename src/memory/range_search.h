// range_search.h: "which range contains [addr, addr+len)?" over ranges sorted
// by start, with max_end[i] = the largest end among ranges 0..i. Ranges may
// overlap. O(log n) when they do not, which is the usual case.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hixl {

// Start(r) and Contains(r, addr, len) describe an element. Returns the index
// of a containing range, or SIZE_MAX.
template <typename T, typename StartFn, typename ContainsFn>
size_t FindContaining(const std::vector<T> &ranges, const std::vector<uint64_t> &max_end, uint64_t addr,
                      uint64_t len, StartFn start, ContainsFn contains) {
  if (len == 0 || addr + len < addr) return SIZE_MAX;
  auto it = std::upper_bound(ranges.begin(), ranges.end(), addr,
                             [&](uint64_t a, const T &r) { return a < start(r); });
  if (it == ranges.begin()) return SIZE_MAX;
  size_t idx = static_cast<size_t>(it - ranges.begin()) - 1;
  if (max_end[idx] < addr + len) return SIZE_MAX;
  for (size_t j = idx + 1; j-- > 0;) {
    if (contains(ranges[j], addr, len)) return j;
  }
  return SIZE_MAX;
}

}  // namespace hixl
