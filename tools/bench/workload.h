// workload.h: the descriptors of one measurement point, laid out over a
// local and a remote buffer, grouped per thread and per call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"
#include "hixl/hixl_types.h"

namespace hixl_bench {

using Call = std::vector<hixl::TransferOpDesc>;

struct Workload {
  Point point;
  uint64_t bytes = 0;         // per iteration, every thread together
  uint64_t slice_bytes = 0;   // per thread
  // calls[t][c]: thread t's c-th TransferSync call (or TransferAsync request).
  std::vector<std::vector<Call>> calls;
};

// Blocks that fit in one thread's slice of a `total_size` buffer; 0 when the
// point does not fit (a block larger than total_size / threads).
uint64_t BlocksPerThread(const Point &p, uint64_t total_size);

// Lays `p` out over local [local, local + total_size) and the same range at
// the remote: thread t owns slice t of both. Scattered layout reverses the
// remote order of the blocks so that no two neighbours in a call can merge.
// False when the point does not fit.
bool BuildWorkload(const Point &p, uint64_t total_size, uintptr_t local, uintptr_t remote, Workload *w);

// Makes each thread's calls run `n` times in a row over the same buffers
// (bytes count every pass).
void RepeatWorkload(int n, Workload *w);

}  // namespace hixl_bench
