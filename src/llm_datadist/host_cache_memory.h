// host_cache_memory.h: the memory AllocateCache gives a kHost cache. A
// memfd, sealed so that it can neither shrink nor grow, mapped MAP_SHARED:
// hixl's shm transport then lets a peer on this host map the cache and copy
// with memcpy instead of process_vm_writev (transport/shm/shared_file.h).
// Where memfds cannot be made, plain anonymous memory as before.
#pragma once

#include <cstddef>

namespace llm_datadist {

struct HostCacheMemory {
  void *base = nullptr;
  size_t len = 0;
  int fd = -1;  // the memfd, open while mapped; -1: anonymous memory
};

// Maps `len` zeroed bytes; false (and errno) if not even anonymous memory
// could be mapped.
bool MapHostCache(size_t len, HostCacheMemory *out);
void UnmapHostCache(HostCacheMemory *m);

}  // namespace llm_datadist
