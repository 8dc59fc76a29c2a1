// cache_task.h: layer-wise pushes from Python: a Python LayerSynchronizer
// called from the task's thread, and the CacheTask handed back.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "llm_py.h"

namespace llm_py {

// (key tuple, dst_addrs, src_layer_range, dst_layer_range, src_batch_index)
using ConfigTuple = std::tuple<KeyTuple, std::vector<uint64_t>, Range, Range, uint32_t>;

// Starts TransferCacheAsync with `synchronizer` (an object with
// synchronize_layer(layer_index, timeout_in_millis) -> bool); (status,
// CacheTask or None). Called with the GIL held.
py::tuple StartLayerPush(ld::LlmDataDist &dd, int64_t src_cache, py::object synchronizer,
                         const std::vector<ConfigTuple> &configs, const std::vector<uint64_t> &src_blocks,
                         const std::vector<uint64_t> &dst_blocks, uint64_t dst_block_memory_size, uint32_t per_layer,
                         int32_t timeout_ms, const std::string &ready_tag);

}  // namespace llm_py
