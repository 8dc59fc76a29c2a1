#include "dtype_size.h"

namespace llm_datadist {

uint32_t ElementBits(int32_t data_type) {
  switch (data_type) {
    case ge::DT_BOOL:
    case ge::DT_INT8:
    case ge::DT_UINT8:
    case ge::DT_QINT8:
    case ge::DT_QUINT8:
    case ge::DT_DUAL_SUB_INT8:
    case ge::DT_DUAL_SUB_UINT8:
    case ge::DT_HIFLOAT8:
    case ge::DT_FLOAT8_E5M2:
    case ge::DT_FLOAT8_E4M3FN:
    case ge::DT_FLOAT8_E8M0:
      return 8;
    case ge::DT_FLOAT16:
    case ge::DT_BF16:
    case ge::DT_INT16:
    case ge::DT_UINT16:
    case ge::DT_QINT16:
    case ge::DT_QUINT16:
      return 16;
    case ge::DT_FLOAT:
    case ge::DT_INT32:
    case ge::DT_UINT32:
    case ge::DT_QINT32:
    case ge::DT_COMPLEX32:
      return 32;
    case ge::DT_DUAL:  // float + int8
      return 40;
    case ge::DT_INT64:
    case ge::DT_UINT64:
    case ge::DT_DOUBLE:
    case ge::DT_COMPLEX64:
    case ge::DT_RESOURCE:
    case ge::DT_VARIANT:
      return 64;
    case ge::DT_COMPLEX128:
      return 128;
    case ge::DT_UINT1:
      return 1;
    case ge::DT_INT2:
    case ge::DT_UINT2:
      return 2;
    case ge::DT_INT4:
    case ge::DT_FLOAT4_E2M1:
    case ge::DT_FLOAT4_E1M2:
    case ge::DT_HIFLOAT4:
      return 4;
    case ge::DT_FLOAT6_E3M2:
    case ge::DT_FLOAT6_E2M3:
      return 6;
    default:  // DT_STRING, DT_STRING_REF, DT_UNDEFINED, unknown values
      return 0;
  }
}

bool ComputeGeometry(const std::vector<int64_t> &shape, int32_t data_type, TensorGeometry *out, std::string *why) {
  constexpr size_t kMaxDims = 32;
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  if (shape.empty() || shape.size() > kMaxDims) {
    *why = "shape has " + std::to_string(shape.size()) + " dims (1 to 32 allowed)";
    return false;
  }
  const uint32_t bits = ElementBits(data_type);
  if (bits == 0) {
    *why = "data_type " + std::to_string(data_type) + " has no fixed element size";
    return false;
  }
  uint64_t unit_bits = bits;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) {
      *why = "dim " + std::to_string(i) + " is " + std::to_string(shape[i]) + " (must be >= 1)";
      return false;
    }
    if (i == 0) continue;
    if (static_cast<uint64_t>(shape[i]) > kLimit / unit_bits) {
      *why = "the tensor is larger than 2^63 bytes";
      return false;
    }
    unit_bits *= static_cast<uint64_t>(shape[i]);
  }
  if (unit_bits % 8 != 0) {
    *why = "a block of " + std::to_string(unit_bits) + " bits is not whole bytes";
    return false;
  }
  const uint64_t unit_bytes = unit_bits / 8;
  const uint64_t units = static_cast<uint64_t>(shape[0]);
  if (units > kLimit / unit_bytes) {
    *why = "the tensor is larger than 2^63 bytes";
    return false;
  }
  out->units = units;
  out->unit_bytes = unit_bytes;
  out->tensor_bytes = units * unit_bytes;
  return true;
}

}  // namespace llm_datadist
