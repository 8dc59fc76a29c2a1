#include "memory/page_access.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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

}  // namespace hixl
