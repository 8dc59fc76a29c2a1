// proc_maps.h: this process's mappings, read from /proc/self/maps. One
// parser for the access checks of registered memory (page_access.cc) and
// for the shm transport's search for the file behind a region
// (transport/shm/shared_file.cc).
#pragma once

#include <cstdint>
#include <functional>

namespace hixl {

// One line: "lo-hi perms offset major:minor inode [path]".
struct Mapping {
  uint64_t lo = 0, hi = 0;  // [lo, hi)
  bool read = false, write = false;
  bool shared = false;  // 's' (MAP_SHARED), else 'p'
  uint64_t offset = 0;  // into the file
  unsigned major = 0, minor = 0;
  uint64_t inode = 0;  // 0: no file behind it
};

// Parses one line, without its newline; false if it is not one.
bool ParseMapping(const char *p, const char *end, Mapping *out);

// Reads /proc/self/maps whole (the kernel builds it a page at a time, so a
// read in parts could see lines twice while the maps change), then calls
// `fn` for each line in address order until it returns false. False, errno
// set, when the file cannot be read.
bool ForEachMapping(const std::function<bool(const Mapping &)> &fn);

}  // namespace hixl
