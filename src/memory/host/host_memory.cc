// host_memory.cc: host memory as a MemoryKind. Its access is what
// /proc/self/maps says (page_access.h): a read-only file mapping may be
// registered to serve READs, and a WRITE into it is refused, not a fault.
#include <cstring>
#include <memory>

#include "common/deadline.h"
#include "common/mutex.h"
#include "device/cuda/cuda_driver.h"
#include "memory/host/page_access.h"
#include "memory/memory_kind.h"
#include "memory/registry.h"

namespace hixl {
namespace {

// PARAM_INVALID when the CUDA driver (only if hixl loaded it already) says
// either end of the range is device memory.
Status CheckNotDevice(uintptr_t addr, size_t len, std::string *why) {
  cuda::Driver *driver = cuda::DriverIfLoaded();
  if (driver == nullptr) return SUCCESS;
  for (uintptr_t at : {addr, addr + len - 1}) {
    cuda::PointerInfo info;
    std::string err;
    if (!driver->Query(at, &info, &err)) continue;  // not CUDA's to judge
    if (info.device) {
      *why = "it is CUDA device memory (device " + std::to_string(info.ordinal) + "): register it as MEM_DEVICE";
      return PARAM_INVALID;
    }
  }
  return SUCCESS;
}

class HostKind final : public MemoryKind {
 public:
  const char *name() const override { return "host"; }
  MemType api_type() const override { return MEM_HOST; }
  wire::MemKind wire_kind() const override { return wire::MemKind::kHost; }

  // Any range: registering must not touch or pin its pages (1 TiB of
  // unpopulated memory registers at once); what may be done with it is
  // looked up at its first use. Except CUDA device memory, once hixl uses
  // CUDA: a memcpy into it would fault.
  Status CheckRegistration(uintptr_t addr, size_t len, MemPlacement *, std::string *why) const override {
    return CheckNotDevice(addr, len, why);
  }

  bool AllowsPart(Region &r, uintptr_t addr, size_t len, unsigned need) const override {
    MutexLock lock(&r.map_mu);
    if (r.map != nullptr && (r.map->Access(addr, len) & need) == need) return true;
    const int64_t now = SteadyMillis();
    // Refused by a map read a moment ago: refused. Read longer ago (or
    // never): read it again, the memory may have been made accessible since.
    if (r.map != nullptr && now - r.map_read_ms < Registry::kMapRereadMs) return false;
    r.map = std::make_shared<const AccessMap>(AccessMap::Of(r.addr, r.len));
    r.map_read_ms = now;
    r.access.store(r.map->whole() | Region::kAccessKnown, std::memory_order_relaxed);
    return (r.map->Access(addr, len) & need) == need;
  }

  size_t FirstInaccessible(const MemRange *ranges, size_t n, unsigned need) const override {
    return hixl::FirstInaccessible(ranges, n, need);
  }

  bool CopyFromHost(const MemPlacement &, void *dst, const void *host_src, size_t n, std::string *) const override {
    std::memcpy(dst, host_src, n);
    return true;
  }
  bool CopyToHost(const MemPlacement &, void *host_dst, const void *src, size_t n, std::string *) const override {
    std::memcpy(host_dst, src, n);
    return true;
  }
};

}  // namespace

const MemoryKind &HostMemory() {
  static const HostKind host;
  return host;
}

const MemoryKind *MemoryKindOf(MemType type, std::string *why) {
  if (type == MEM_HOST) return &HostMemory();
  if (type == MEM_DEVICE) return DeviceMemory(why);
  *why = "unknown memory type " + std::to_string(static_cast<int>(type));
  return nullptr;
}

}  // namespace hixl
