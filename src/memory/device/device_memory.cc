// device_memory.cc: CUDA device memory as a MemoryKind. Registration asks
// the driver that the range is device memory of one allocation (a caching
// allocator's block inside a bigger one is fine) and keeps its device and
// allocation. The host never touches it: staging copies go through the
// driver, and a transport that reaches it directly (cuda_ipc) uses the
// placement kept in the region.
#include <cinttypes>
#include <cstdio>

#include "device/cuda/cuda_driver.h"
#include "memory/memory_kind.h"
#include "memory/registry.h"

namespace hixl {
namespace {

std::string Hex(uintptr_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%" PRIxPTR, v);
  return b;
}

class DeviceKind final : public MemoryKind {
 public:
  const char *name() const override { return "device"; }
  MemType api_type() const override { return MEM_DEVICE; }
  wire::MemKind wire_kind() const override { return wire::MemKind::kDevice; }

  Status CheckRegistration(uintptr_t addr, size_t len, MemPlacement *where, std::string *why) const override {
    cuda::Driver *driver = cuda::GetDriver(why);
    if (driver == nullptr) return UNSUPPORTED;
    cuda::PointerInfo info;
    std::string err;
    if (!driver->Query(addr, &info, &err)) {
      *why = "the CUDA driver cannot say what it is: " + err;
      return FAILED;
    }
    if (info.managed) {
      *why = "it is CUDA managed memory, which the host reaches itself: register it as MEM_HOST";
      return PARAM_INVALID;
    }
    if (!info.device) {
      *why = "it is not CUDA device memory (host memory? register it as MEM_HOST)";
      return PARAM_INVALID;
    }
    // One registration lies in one allocation: its copies, its IPC handle.
    if (addr < info.base || len > info.size || addr - info.base > info.size - len) {
      *why = "it runs past the end of its CUDA allocation " + Hex(info.base) + "+" + std::to_string(info.size) +
             " (register each allocation on its own)";
      return PARAM_INVALID;
    }
    where->device = info.ordinal;
    where->alloc_base = info.base;
    where->alloc_len = info.size;
    where->ipc_capable = info.ipc_capable;
    return SUCCESS;
  }

  // The engine reads and writes device memory only through the driver,
  // which checks what it is given.
  bool AllowsPart(Region &, uintptr_t, size_t, unsigned) const override { return true; }
  // Unregistered memory is host memory (see the relay).
  size_t FirstInaccessible(const MemRange *, size_t n, unsigned) const override { return n; }

  bool CopyFromHost(const MemPlacement &where, void *dst, const void *host_src, size_t n,
                    std::string *why) const override {
    cuda::Driver *driver = cuda::GetDriver(why);
    return driver != nullptr &&
           driver->CopyToDevice(where.device, reinterpret_cast<uintptr_t>(dst), host_src, n, why);
  }
  bool CopyToHost(const MemPlacement &where, void *host_dst, const void *src, size_t n,
                  std::string *why) const override {
    cuda::Driver *driver = cuda::GetDriver(why);
    return driver != nullptr &&
           driver->CopyFromDevice(where.device, host_dst, reinterpret_cast<uintptr_t>(src), n, why);
  }
};

}  // namespace

const MemoryKind *DeviceMemory(std::string *why) {
  static const DeviceKind device;
  std::string cause;
  if (cuda::GetDriver(&cause) == nullptr) {
    *why = "MEM_DEVICE needs CUDA: " + cause;
    return nullptr;
  }
  return &device;
}

}  // namespace hixl
