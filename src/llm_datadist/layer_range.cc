#include "layer_range.h"

#include "llm_log.h"

namespace llm_datadist {
namespace {

bool IsDefault(const std::pair<int32_t, int32_t> &r) { return r.first == -1 && r.second == -1; }

bool WellFormed(const std::pair<int32_t, int32_t> &r) {
  return IsDefault(r) || (r.first >= 0 && r.first <= r.second);
}

// Tensors [begin, end) of `range` in a cache of `tensors`, or false.
bool TensorsOf(const char *call, const char *side, const std::pair<int32_t, int32_t> &range, uint32_t per_layer,
               uint32_t tensors, uint32_t *begin, uint32_t *end) {
  if (tensors % per_layer != 0) {
    LLM_LOGE("%s: %s cache has %u tensors, not a multiple of tensor_num_per_layer %u", call, side, tensors,
             per_layer);
    return false;
  }
  const uint64_t b = static_cast<uint64_t>(range.first) * per_layer;
  const uint64_t e = (static_cast<uint64_t>(range.second) + 1) * per_layer;
  if (e > tensors) {
    LLM_LOGE("%s: %s layer range [%d, %d] is past the last layer %u", call, side, range.first, range.second,
             tensors / per_layer - 1);
    return false;
  }
  *begin = static_cast<uint32_t>(b);
  *end = static_cast<uint32_t>(e);
  return true;
}

}  // namespace

Status CheckExtParam(const char *call, const KvCacheExtParam &ext, bool same_size) {
  if (!WellFormed(ext.src_layer_range) || !WellFormed(ext.dst_layer_range)) {
    LLM_LOGE("%s: layer ranges must be {-1, -1} or 0 <= first <= second (src [%d, %d], dst [%d, %d])", call,
             ext.src_layer_range.first, ext.src_layer_range.second, ext.dst_layer_range.first,
             ext.dst_layer_range.second);
    return LLM_PARAM_INVALID;
  }
  if (ext.tensor_num_per_layer == 0) {
    LLM_LOGE("%s: tensor_num_per_layer is 0", call);
    return LLM_PARAM_INVALID;
  }
  if (same_size && !IsDefault(ext.src_layer_range) && !IsDefault(ext.dst_layer_range) &&
      ext.src_layer_range.second - ext.src_layer_range.first !=
          ext.dst_layer_range.second - ext.dst_layer_range.first) {
    LLM_LOGE("%s: src layer range [%d, %d] and dst layer range [%d, %d] differ in size", call,
             ext.src_layer_range.first, ext.src_layer_range.second, ext.dst_layer_range.first,
             ext.dst_layer_range.second);
    return LLM_PARAM_INVALID;
  }
  return LLM_SUCCESS;
}

Status PairTensors(const char *call, const KvCacheExtParam &ext, uint32_t src_tensors, uint32_t dst_tensors,
                   std::vector<std::pair<uint32_t, uint32_t>> *pairs) {
  Status s = CheckExtParam(call, ext, true);
  if (s != LLM_SUCCESS) return s;
  pairs->clear();
  if (IsDefault(ext.src_layer_range) && IsDefault(ext.dst_layer_range)) {
    if (src_tensors != dst_tensors) {
      LLM_LOGE("%s: the source cache has %u tensors and the destination %u; name the layers to move", call,
               src_tensors, dst_tensors);
      return LLM_PARAM_INVALID;
    }
    for (uint32_t t = 0; t < src_tensors; ++t) pairs->emplace_back(t, t);
    return LLM_SUCCESS;
  }
  const auto &src_range = IsDefault(ext.src_layer_range) ? ext.dst_layer_range : ext.src_layer_range;
  const auto &dst_range = IsDefault(ext.dst_layer_range) ? ext.src_layer_range : ext.dst_layer_range;
  const uint32_t per = ext.tensor_num_per_layer;
  uint32_t sb = 0, se = 0, db = 0, de = 0;
  if (!TensorsOf(call, "source", src_range, per, src_tensors, &sb, &se) ||
      !TensorsOf(call, "destination", dst_range, per, dst_tensors, &db, &de)) {
    return LLM_PARAM_INVALID;
  }
  for (uint32_t i = 0; i < se - sb; ++i) pairs->emplace_back(sb + i, db + i);
  return LLM_SUCCESS;
}

}  // namespace llm_datadist
