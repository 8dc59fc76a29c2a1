// ipc_section.h: what cuda_ipc attaches to a device region's table entry:
// the IPC handle of the allocation holding it, and where that allocation
// lies in the target (a range's offset in it is the same in every process).
// Decoded as hostile input: a peer's table says it.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/cuda/cuda_driver.h"

namespace hixl::cuda_ipc {

constexpr uint16_t kWireId = 4;

struct IpcSection {
  cuda::IpcHandle handle;
  uint64_t alloc_base = 0;  // in the target's address space
  uint64_t alloc_len = 0;
};

constexpr size_t kSectionBytes = sizeof(cuda::IpcHandle::bytes) + 16;

inline void EncodeSection(const IpcSection &s, std::vector<uint8_t> *out) {
  out->resize(kSectionBytes);
  std::memcpy(out->data(), s.handle.bytes, sizeof(s.handle.bytes));
  for (int i = 0; i < 8; ++i) {
    (*out)[64 + i] = static_cast<uint8_t>(s.alloc_base >> (8 * i));
    (*out)[72 + i] = static_cast<uint8_t>(s.alloc_len >> (8 * i));
  }
}

// False unless `bytes` is a whole section (later versions may append).
inline bool DecodeSection(const std::vector<uint8_t> &bytes, IpcSection *s) {
  if (bytes.size() < kSectionBytes) return false;
  std::memcpy(s->handle.bytes, bytes.data(), sizeof(s->handle.bytes));
  s->alloc_base = s->alloc_len = 0;
  for (int i = 7; i >= 0; --i) {
    s->alloc_base = (s->alloc_base << 8) | bytes[64 + i];
    s->alloc_len = (s->alloc_len << 8) | bytes[72 + i];
  }
  return s->alloc_len > 0 && s->alloc_base + s->alloc_len > s->alloc_base;
}

}  // namespace hixl::cuda_ipc
