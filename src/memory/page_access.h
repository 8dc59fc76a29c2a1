// page_access.h: what this process may do with a range of its own memory,
// as /proc/self/maps says.
//
// The TCP target copies a peer's WRITE into registered memory, and a READ
// out of it, partly with memcpy. A region registered read-only (a file
// mapped PROT_READ to serve READs, say) would fault the whole process on a
// peer's WRITE; with this check the target refuses the request instead.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hixl {

enum PageAccess : unsigned {
  kPageRead = 1,
  kPageWrite = 2,
};

// The PageAccess bits that hold for every byte of [addr, addr + len): 0 when
// part of it is not mapped. When /proc/self/maps cannot be read (no /proc),
// reports both bits: the caller then copies as it would without the check.
unsigned RangeAccess(uintptr_t addr, size_t len);

}  // namespace hixl
