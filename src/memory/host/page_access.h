// page_access.h: what this process may do with ranges of its own memory,
// as /proc/self/maps says.
//
// Registered memory may be read-only (a file mapped PROT_READ, to serve
// READs). The engine copies into and out of it partly with memcpy, which
// would fault the whole process on a peer's WRITE into such memory (or on a
// READ into a read-only local buffer); with this check the request is
// refused instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memory/memory_kind.h"

namespace hixl {

// The access of each part of one range of memory, from one read of
// /proc/self/maps.
class AccessMap {
 public:
  // Reads the map of [addr, addr + len). When /proc/self/maps cannot be read
  // (no /proc) every part reads as readable and writable: the engine then
  // copies as it would without the check.
  static AccessMap Of(uintptr_t addr, size_t len);

  // The PageAccess bits that hold for every byte of [addr, addr + len): 0
  // when part of it is not mapped (or outside the range the map was read for).
  unsigned Access(uintptr_t addr, size_t len) const;
  // The same for the whole range the map was read for.
  unsigned whole() const { return whole_; }

 private:
  struct Span {
    uint64_t lo, hi;  // [lo, hi), clipped to the range
    unsigned access;
  };
  std::vector<Span> spans_;  // the mapped parts, in address order
  unsigned whole_ = 0;
};

// AccessMap::Of(addr, len).whole().
unsigned RangeAccess(uintptr_t addr, size_t len);

// The index of the first of ranges[0..n) of which this process may not do
// `need` (PageAccess bits) with every byte; n if it may with all. For memory
// that is not registered (the relay copies it with memcpy), so it must cost
// little per call: instead of reading /proc/self/maps it asks the kernel to
// copy one byte of every distinct page touched (process_vm_readv on
// ourselves, and for kPageWrite process_vm_writev of the same byte back); a
// page we may not touch is then an error return, not a fault. This also
// finds pages that map no memory although the maps allow them (a shared file
// mapping past the end of its file: SIGBUS). The byte written back lies
// inside a range, which the caller hands over to be overwritten (a store
// racing the probe into that byte can be undone: the caller is not to touch
// it meanwhile). Above as many pages as one read of the maps costs (timed
// the last time it was read; at least 64), and where process_vm_* is not
// allowed, reads the maps instead (AccessMap), which cannot see past-EOF
// pages. Neither sees memory protection keys (pkey_mprotect): the kernel's
// copies do not check them, and the maps do not show them.
size_t FirstInaccessible(const MemRange *ranges, size_t n, unsigned need);

// How many times FirstInaccessible has read /proc/self/maps (tests).
uint64_t MapsReadsForTest();

}  // namespace hixl
