#include "workload.h"

#include <algorithm>

namespace hixl_bench {

uint64_t BlocksPerThread(const Point &p, uint64_t total_size) {
  if (p.block == 0 || p.threads <= 0) return 0;
  return total_size / static_cast<uint64_t>(p.threads) / p.block;
}

bool BuildWorkload(const Point &p, uint64_t total_size, uintptr_t local, uintptr_t remote, Workload *w) {
  const uint64_t n = BlocksPerThread(p, total_size);
  if (n == 0 || p.batch == 0) return false;
  w->point = p;
  w->slice_bytes = n * p.block;
  w->bytes = w->slice_bytes * static_cast<uint64_t>(p.threads);
  w->calls.assign(static_cast<size_t>(p.threads), {});
  const uint64_t slice_stride = total_size / static_cast<uint64_t>(p.threads);
  for (int t = 0; t < p.threads; ++t) {
    const uint64_t base = slice_stride * static_cast<uint64_t>(t);
    auto &calls = w->calls[static_cast<size_t>(t)];
    for (uint64_t i = 0; i < n; i += p.batch) {
      Call call;
      const uint64_t end = std::min(n, i + p.batch);
      call.reserve(end - i);
      for (uint64_t b = i; b < end; ++b) {
        const uint64_t lb = p.layout == Layout::kOneBlock ? 0 : b;
        const uint64_t rb = p.layout == Layout::kScattered ? n - 1 - b : lb;
        call.push_back({local + base + lb * p.block, remote + base + rb * p.block, p.block});
      }
      calls.push_back(std::move(call));
    }
  }
  return true;
}

void RepeatWorkload(int n, Workload *w) {
  if (n <= 1) return;
  for (auto &calls : w->calls) {
    const std::vector<Call> once = calls;
    for (int i = 1; i < n; ++i) calls.insert(calls.end(), once.begin(), once.end());
  }
  w->slice_bytes *= static_cast<uint64_t>(n);
  w->bytes *= static_cast<uint64_t>(n);
}

}  // namespace hixl_bench
