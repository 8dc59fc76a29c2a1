// layer_range.h: which tensors of the two caches a KvCacheExtParam pairs.
//
// A layer is tensor_num_per_layer consecutive tensors. {-1, -1} on both
// sides: every tensor, pairwise (the caches must have as many). A range
// [first, second] (inclusive) on one side only: the same layers on the other.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {

// (source tensor, destination tensor) pairs in order, or LLM_PARAM_INVALID
// (logged, prefixed with `call`).
Status PairTensors(const char *call, const KvCacheExtParam &ext, uint32_t src_tensors, uint32_t dst_tensors,
                   std::vector<std::pair<uint32_t, uint32_t>> *pairs);

// The layer range's own checks, before any cache is looked at.
Status CheckExtParam(const char *call, const KvCacheExtParam &ext, bool same_size);

}  // namespace llm_datadist
