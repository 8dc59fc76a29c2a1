// ipc_handle_cache.h: a peer's CUDA allocations opened in this process, by
// IPC handle: each is opened once (cuIpcOpenMemHandle costs milliseconds
// and maps the whole allocation) and used by every batch into it, until the
// peer revokes a region of it or the link goes. Not thread-safe: its
// channel holds its lock around every call.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "device/cuda/cuda_driver.h"

namespace hixl::cuda_ipc {

class IpcHandleCache {
 public:
  using Key = std::array<unsigned char, sizeof(cuda::IpcHandle::bytes)>;
  static Key KeyOf(const cuda::IpcHandle &h);

  IpcHandleCache(cuda::Driver *driver, int ordinal) : driver_(driver), ordinal_(ordinal) {}
  ~IpcHandleCache() { Clear(); }
  IpcHandleCache(const IpcHandleCache &) = delete;
  IpcHandleCache &operator=(const IpcHandleCache &) = delete;

  // Where the allocation `h` names lies in this process: opened at its
  // first use, then the same. False (nothing cached) when it cannot be opened.
  bool Map(const cuda::IpcHandle &h, uintptr_t *base, std::string *why);
  // Closes the allocation's mapping, if open (a copy into it must have
  // finished). Later Maps open it again.
  void Unmap(const Key &key);
  bool Holds(const Key &key) const { return open_.count(key) != 0; }
  // Closes every mapping.
  void Clear();
  size_t size() const { return open_.size(); }

 private:
  cuda::Driver *const driver_;
  const int ordinal_;
  std::map<Key, uintptr_t> open_;
};

}  // namespace hixl::cuda_ipc
