#include "memory/page_access.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"

namespace hixl {
namespace {

// Parses a lowercase hex number at *p, advancing past it.
uint64_t Hex(const char **p, const char *end) {
  uint64_t v = 0;
  for (; *p < end; ++*p) {
    char c = **p;
    unsigned d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 16;
    if (d == 16) break;
    v = v << 4 | d;
  }
  return v;
}

// One line "lo-hi perms ...": false for anything else.
bool ParseLine(const char *p, const char *e, uint64_t *lo, uint64_t *hi, unsigned *access) {
  *lo = Hex(&p, e);
  if (p == e || *p != '-') return false;
  ++p;
  *hi = Hex(&p, e);
  if (e - p < 3 || *p != ' ') return false;
  *access = (p[1] == 'r' ? kPageRead : 0u) | (p[2] == 'w' ? kPageWrite : 0u);
  return true;
}

bool ReadAll(const char *path, std::string *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

}  // namespace

AccessMap AccessMap::Of(uintptr_t addr, size_t len) {
  AccessMap m;
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  if (len == 0) {
    m.whole_ = kPageRead | kPageWrite;
    return m;
  }
  // Read whole: a process has at most some tens of thousands of lines, and
  // this runs once per region (see Registry::Allows).
  std::string maps;
  if (!ReadAll("/proc/self/maps", &maps)) {
    HIXL_LOGW("cannot open /proc/self/maps (%s): the access of registered memory is not checked",
              std::strerror(errno));
    m.spans_.push_back({addr, end, kPageRead | kPageWrite});
    m.whole_ = kPageRead | kPageWrite;
    return m;
  }
  for (size_t at = 0; at < maps.size();) {
    size_t nl = maps.find('\n', at);
    if (nl == std::string::npos) nl = maps.size();
    uint64_t lo = 0, hi = 0;
    unsigned access = 0;
    if (ParseLine(maps.data() + at, maps.data() + nl, &lo, &hi, &access)) {
      if (lo >= end) break;  // in address order: nothing more of ours
      if (hi > addr) m.spans_.push_back({std::max<uint64_t>(lo, addr), std::min(hi, end), access});
    }
    at = nl + 1;
  }
  m.whole_ = m.Access(addr, len);
  return m;
}

unsigned AccessMap::Access(uintptr_t addr, size_t len) const {
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  // From the last span starting at or before addr.
  auto it = std::upper_bound(spans_.begin(), spans_.end(), static_cast<uint64_t>(addr),
                             [](uint64_t a, const Span &s) { return a < s.lo; });
  if (it != spans_.begin()) --it;
  unsigned access = kPageRead | kPageWrite;
  for (uint64_t cursor = addr; cursor < end; cursor = it->hi) {
    // (Spans wholly behind the cursor: a line read twice while the maps changed.)
    while (it != spans_.end() && it->hi <= cursor) ++it;
    if (it == spans_.end() || it->lo > cursor) return 0;  // a hole
    access &= it->access;
  }
  return access;
}

unsigned RangeAccess(uintptr_t addr, size_t len) { return AccessMap::Of(addr, len).whole(); }

namespace {

constexpr size_t kProbeBatch = 1024;  // IOV_MAX: iovecs per process_vm_* call
// Above this many pages one read of /proc/self/maps costs less than the
// probes: a call ~0.6 us, then ~0.25 us a page to read, ~0.45 to read and
// write back; the maps of a small process ~25 us, of a large one ~1 ms. (The
// memcpy the check guards costs ~0.3 us a page here.)
constexpr size_t kMaxProbePages = 64;

// How many of the n one-byte probes in remote[] succeeded, in order (n: all);
// -1 when this process may not use process_vm_* (seccomp, no kernel support).
ssize_t Probe(iovec *remote, size_t n, unsigned need) {
  char bytes[kProbeBatch];
  iovec local{bytes, n};
  const pid_t self = getpid();
  // The calls stop at the first element they cannot copy and return what
  // they copied before it (a fault on the first is EFAULT).
  ssize_t got = process_vm_readv(self, &local, 1, remote, n, 0);
  if (got < 0) return errno == EFAULT ? 0 : -1;
  if (!(need & kPageWrite) || got == 0) return got;
  local.iov_len = static_cast<size_t>(got);  // write back exactly what was read
  ssize_t put = process_vm_writev(self, &local, 1, remote, static_cast<size_t>(got), 0);
  if (put < 0) return errno == EFAULT ? 0 : -1;
  return put;
}

size_t FirstInaccessibleByMap(const MemRange *ranges, size_t n, unsigned need) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, ranges[i].addr);
    hi = std::max(hi, ranges[i].addr + ranges[i].len);
  }
  const AccessMap map = AccessMap::Of(lo, hi - lo);
  for (size_t i = 0; i < n; ++i) {
    if ((map.Access(ranges[i].addr, ranges[i].len) & need) != need) return i;
  }
  return n;
}

}  // namespace

size_t FirstInaccessible(const MemRange *ranges, size_t n, unsigned need) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  static std::atomic<bool> cannot_probe{false};
  if (need == 0 || n == 0) return n;
  size_t pages = 0;
  for (size_t i = 0; i < n && pages <= kMaxProbePages; ++i) {
    pages += (ranges[i].addr + ranges[i].len - 1) / page - ranges[i].addr / page + 1;
  }
  if (pages > kMaxProbePages || cannot_probe.load(std::memory_order_relaxed)) {
    return FirstInaccessibleByMap(ranges, n, need);
  }
  iovec remote[kProbeBatch];
  size_t owner[kProbeBatch];  // the range each probe is of
  size_t count = 0;
  // Probes the batch; the range of its first failed probe, or n.
  auto flush = [&]() -> size_t {
    const ssize_t ok = Probe(remote, count, need);
    if (ok < 0) {
      HIXL_LOGI("process_vm_readv/writev on ourselves not allowed (%s): checking memory access from /proc/self/maps",
                std::strerror(errno));
      cannot_probe.store(true, std::memory_order_relaxed);
      const size_t from = owner[0];
      return from + FirstInaccessibleByMap(ranges + from, n - from, need);
    }
    const size_t failed = static_cast<size_t>(ok) < count ? owner[ok] : n;
    count = 0;
    return failed;
  };
  for (size_t i = 0; i < n; ++i) {
    const uintptr_t end = ranges[i].addr + ranges[i].len;
    // The first byte of the range, then the first byte of every later page.
    for (uintptr_t at = ranges[i].addr; at < end; at = (at / page + 1) * page) {
      remote[count] = {reinterpret_cast<void *>(at), 1};
      owner[count++] = i;
      if (count == kProbeBatch) {
        const size_t failed = flush();
        if (failed != n) return failed;
      }
    }
  }
  return count == 0 ? n : flush();
}

}  // namespace hixl
