#include "memory/host/proc_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace hixl {
namespace {

// A number in `base` (16: lowercase hex) at *p, advancing past it; false if
// there is no digit.
bool Number(const char **p, const char *end, unsigned base, uint64_t *v) {
  const char *start = *p;
  *v = 0;
  for (; *p < end; ++*p) {
    const char c = **p;
    const unsigned d = c >= '0' && c <= '9' ? static_cast<unsigned>(c - '0')
                       : base == 16 && c >= 'a' && c <= 'f' ? static_cast<unsigned>(c - 'a' + 10)
                                                            : base;
    if (d >= base) break;
    *v = *v * base + d;
  }
  return *p != start;
}

bool Skip(const char **p, const char *end, char c) {
  if (*p == end || **p != c) return false;
  ++*p;
  return true;
}

bool ReadAll(const char *path, std::string *out) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16384];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

}  // namespace

bool ParseMapping(const char *p, const char *end, Mapping *out) {
  Mapping m;
  uint64_t major = 0, minor = 0;
  if (!Number(&p, end, 16, &m.lo) || !Skip(&p, end, '-') || !Number(&p, end, 16, &m.hi) || !Skip(&p, end, ' ') ||
      end - p < 5 || p[4] != ' ') {
    return false;
  }
  m.read = p[0] == 'r';
  m.write = p[1] == 'w';
  m.shared = p[3] == 's';
  p += 5;
  if (!Number(&p, end, 16, &m.offset) || !Skip(&p, end, ' ') || !Number(&p, end, 16, &major) ||
      !Skip(&p, end, ':') || !Number(&p, end, 16, &minor) || !Skip(&p, end, ' ') || !Number(&p, end, 10, &m.inode)) {
    return false;
  }
  m.major = static_cast<unsigned>(major);
  m.minor = static_cast<unsigned>(minor);
  *out = m;
  return true;
}

bool ForEachMapping(const std::function<bool(const Mapping &)> &fn) {
  std::string maps;
  if (!ReadAll("/proc/self/maps", &maps)) return false;
  for (size_t at = 0; at < maps.size();) {
    size_t nl = maps.find('\n', at);
    if (nl == std::string::npos) nl = maps.size();
    Mapping m;
    if (ParseMapping(maps.data() + at, maps.data() + nl, &m) && !fn(m)) break;
    at = nl + 1;
  }
  return true;
}

}  // namespace hixl
