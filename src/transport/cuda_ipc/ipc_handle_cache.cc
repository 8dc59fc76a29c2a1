#include "transport/cuda_ipc/ipc_handle_cache.h"

#include <cinttypes>
#include <cstring>

#include "common/log.h"

namespace hixl::cuda_ipc {

IpcHandleCache::Key IpcHandleCache::KeyOf(const cuda::IpcHandle &h) {
  Key k;
  std::memcpy(k.data(), h.bytes, k.size());
  return k;
}

bool IpcHandleCache::Map(const cuda::IpcHandle &h, uintptr_t *base, std::string *why) {
  const Key key = KeyOf(h);
  auto it = open_.find(key);
  if (it != open_.end()) {
    *base = it->second;
    return true;
  }
  uintptr_t opened = 0;
  if (!driver_->IpcOpen(ordinal_, h, &opened, why)) return false;
  open_.emplace(key, opened);
  *base = opened;
  return true;
}

void IpcHandleCache::Unmap(const Key &key) {
  auto it = open_.find(key);
  if (it == open_.end()) return;
  std::string why;
  if (!driver_->IpcClose(ordinal_, it->second, &why)) {
    HIXL_LOGW("cuda_ipc: closing the peer's allocation mapped at 0x%" PRIxPTR ": %s", it->second, why.c_str());
  }
  open_.erase(it);
}

void IpcHandleCache::Clear() {
  while (!open_.empty()) Unmap(open_.begin()->first);
}

}  // namespace hixl::cuda_ipc
