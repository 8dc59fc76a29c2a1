// freezes.h: how often the orchestrator froze each child, in a small file
// the orchestrator makes and every child maps. A call of a child that a
// freeze of its own process stretched sees its count move, and is not held
// to its deadline.
//
// The orchestrator counts a thaw before it sends the SIGCONT, while the
// child cannot run: a call that any part of a freeze stretched began before
// that count and ends after it. (Counted after the SIGCONT, by the
// orchestrator or by a SIGCONT handler in the child, a call that ended just
// after the thaw could read the count before it moved and be blamed for
// the freeze: under TSan a handler runs late, at the thread's next
// intercepted call. Counted before the SIGSTOP, a call begun between the
// count and the stop would be.)
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "soak/layout.h"

namespace soak {

constexpr int kFreezeSlots = kMaxTargets + kMaxInitiators;

inline int FreezeSlot(bool target, int index) { return target ? index : kMaxTargets + index; }

inline std::string FreezesPath(const std::string &dir) { return dir + "/freezes"; }

// The kFreezeSlots counts in `path` (made and zeroed if `create`), or
// nullptr if it cannot be mapped.
inline uint64_t *MapFreezes(const std::string &path, bool create) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
  if (fd < 0) return nullptr;
  const size_t len = sizeof(uint64_t) * kFreezeSlots;
  if (create && ftruncate(fd, static_cast<off_t>(len)) != 0) {
    close(fd);
    return nullptr;
  }
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<uint64_t *>(p);
}

// Shared with other processes: atomic accesses only.
inline uint64_t LoadCount(uint64_t *count) { return std::atomic_ref<uint64_t>(*count).load(); }
inline void BumpCount(uint64_t *count) { std::atomic_ref<uint64_t>(*count).fetch_add(1); }

}  // namespace soak
