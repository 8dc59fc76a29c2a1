// dtype_size.h: sizes of CANN data types, and the byte counts of tensors,
// blocks and batch items they give.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm_datadist/data_type.h"

namespace llm_datadist {

// Bits of one element, or 0 for types without a fixed size (strings,
// DT_UNDEFINED) and values that are no type.
uint32_t ElementBits(int32_t data_type);

// The geometry of a cache's tensors: dim 0 counts blocks (or batch items);
// a unit (one block or item) is the product of the other dims.
struct TensorGeometry {
  uint64_t units = 0;       // shape[0]
  uint64_t unit_bytes = 0;  // bytes of one block / batch item
  uint64_t tensor_bytes = 0;
};

// False (with the reason in *why) for an empty shape, more than 32 dims, a
// dim < 1, a type without a size, a unit that is not whole bytes, or sizes
// past 2^63.
bool ComputeGeometry(const std::vector<int64_t> &shape, int32_t data_type, TensorGeometry *out, std::string *why);

}  // namespace llm_datadist
