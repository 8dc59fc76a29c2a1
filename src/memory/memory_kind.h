// memory_kind.h: what the engine needs to know about one kind of memory, in
// one place. Registration asks it whether a range really is such memory, the
// access checks ask it what this process may do with a registered range, and
// the relay (unregistered local memory through staging buffers) asks it what
// it may touch and copies with it. Host memory (memory/host/) and CUDA device
// memory (memory/device/) are the kinds of this build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hixl/hixl_types.h"
#include "wire/messages.h"

namespace hixl {

struct Region;

// What a process may do with memory (bits).
enum PageAccess : unsigned {
  kPageRead = 1,
  kPageWrite = 2,
};

struct MemRange {
  uintptr_t addr;
  size_t len;
};

// Where a registered range lives, as its kind found at registration (kept
// in its Region). Host memory: the defaults.
struct MemPlacement {
  int device = -1;           // the GPU's ordinal
  uintptr_t alloc_base = 0;  // the allocation holding the range
  size_t alloc_len = 0;
  bool ipc_capable = false;  // a legacy CUDA IPC handle can export the allocation
};

class MemoryKind {
 public:
  virtual ~MemoryKind() = default;
  // Its placement name in protocol_desc ("host", "device").
  virtual const char *name() const = 0;
  virtual MemType api_type() const = 0;
  virtual wire::MemKind wire_kind() const = 0;

  // RegisterMem of [addr, addr+len) as this kind: SUCCESS, or PARAM_INVALID
  // (not memory of this kind) / UNSUPPORTED (this host cannot have it), with
  // the reason in *why. Where it lives goes to *where.
  virtual Status CheckRegistration(uintptr_t addr, size_t len, MemPlacement *where, std::string *why) const = 0;
  // Whether this process may do `need` (PageAccess) with every byte of
  // [addr, addr+len) inside registered region `r`. Called per segment when
  // r.access does not already say yes (see Registry::Allows).
  virtual bool AllowsPart(Region &r, uintptr_t addr, size_t len, unsigned need) const = 0;
  // For memory that is not registered (the relay copies it): the index of
  // the first of ranges[0..n) of which this process may not do `need` with
  // every byte; n if it may with all. Checked on every call, so cheap.
  virtual size_t FirstInaccessible(const MemRange *ranges, size_t n, unsigned need) const = 0;
  // Copies between memory of this kind (at `where`) and host memory
  // (staging buffers); false, with why, when the copy failed.
  virtual bool CopyFromHost(const MemPlacement &where, void *dst, const void *host_src, size_t n,
                            std::string *why) const = 0;
  virtual bool CopyToHost(const MemPlacement &where, void *host_dst, const void *src, size_t n,
                          std::string *why) const = 0;
};

// Host memory: malloc, mmap, NumPy arrays...
const MemoryKind &HostMemory();
// CUDA device memory; nullptr, with the reason, where there is no CUDA
// driver or GPU (memory/device/).
const MemoryKind *DeviceMemory(std::string *why);
// The kind a MemType names; nullptr, with the reason in *why, where this
// build or host has none (MEM_DEVICE without an accelerator runtime).
const MemoryKind *MemoryKindOf(MemType type, std::string *why);

}  // namespace hixl
