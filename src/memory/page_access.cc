#include "memory/page_access.h"

#include <fcntl.h>
#include <unistd.h>

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

// Walks the mappings in address order (the order of /proc/self/maps).
class MapsWalk {
 public:
  MapsWalk(uint64_t start, uint64_t end) : cursor_(start), end_(end) {}

  // One line "start-end perms ..."; false once the answer is known.
  bool Line(const char *p, const char *e) {
    uint64_t lo = Hex(&p, e);
    if (p == e || *p != '-') return true;  // not a mapping line: skip it
    ++p;
    uint64_t hi = Hex(&p, e);
    if (e - p < 3 || *p != ' ') return true;
    if (hi <= cursor_) return true;  // before the range
    if (lo > cursor_) return Finish(0);  // a hole
    access_ &= (p[1] == 'r' ? kPageRead : 0u) | (p[2] == 'w' ? kPageWrite : 0u);
    cursor_ = hi;
    return cursor_ < end_ ? true : Finish(access_);
  }
  unsigned result() const { return done_ ? result_ : 0; }  // ran out of mappings: the end is unmapped

 private:
  bool Finish(unsigned r) {
    result_ = r;
    done_ = true;
    return false;
  }

  uint64_t cursor_;
  const uint64_t end_;
  unsigned access_ = kPageRead | kPageWrite;
  unsigned result_ = 0;
  bool done_ = false;
};

}  // namespace

unsigned RangeAccess(uintptr_t addr, size_t len) {
  if (len == 0) return kPageRead | kPageWrite;
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    HIXL_LOGW("cannot open /proc/self/maps (%s): memory access of registered regions is not checked",
              std::strerror(errno));
    return kPageRead | kPageWrite;
  }
  // Read it whole: a process has at most some tens of thousands of lines,
  // and this runs once per region (see Registry::Allows).
  std::string maps;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    maps.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  MapsWalk walk(addr, end);
  for (size_t at = 0; at < maps.size();) {
    size_t nl = maps.find('\n', at);
    if (nl == std::string::npos) nl = maps.size();
    if (!walk.Line(maps.data() + at, maps.data() + nl)) break;
    at = nl + 1;
  }
  return walk.result();
}

}  // namespace hixl
