#include "host_cache_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "llm_log.h"

namespace llm_datadist {
namespace {

// A sealed memfd of `len` bytes, mapped; false if any step fails.
bool MapMemfd(size_t len, HostCacheMemory *out) {
  const int fd = memfd_create("hixl-kv-cache", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void *p = MAP_FAILED;
  const char *step = "memfd_create";
  if (fd >= 0 && (step = "ftruncate", ftruncate(fd, static_cast<off_t>(len)) == 0) &&
      (step = "F_ADD_SEALS", fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)) {
    step = "mmap";
    p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (p == MAP_FAILED) {
    LLM_LOGW("AllocateCache: a memfd of %zu bytes could not be made (%s: %s): anonymous memory instead, which peers "
             "on this host reach with process_vm_writev only",
             len, step, std::strerror(errno));
    if (fd >= 0) close(fd);
    return false;
  }
  *out = {p, len, fd};
  return true;
}

}  // namespace

bool MapHostCache(size_t len, HostCacheMemory *out) {
  if (MapMemfd(len, out)) return true;
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  *out = {p, len, -1};
  return true;
}

void UnmapHostCache(HostCacheMemory *m) {
  if (m->base != nullptr) munmap(m->base, m->len);
  if (m->fd >= 0) close(m->fd);
  *m = {};
}

}  // namespace llm_datadist
