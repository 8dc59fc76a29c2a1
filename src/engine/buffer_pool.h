// buffer_pool.h: HIXL's buffer pool ("N:S"): N staging buffers of S MiB
// owned by the engine. A batch whose local range is not registered goes
// through them (see relay.h). Buffers are handed out in request order; a
// request that finds none free waits for one instead of failing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "common/mutex.h"

namespace hixl {

class BufferPool {
 public:
  struct Buffer {
    uint8_t *data;
    size_t size;
  };
  using Ready = std::function<void(Buffer *)>;

  // Maps count x size bytes (lazily backed by the kernel).
  BufferPool(size_t count, size_t size);
  ~BufferPool();
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  bool enabled() const { return !buffers_.empty(); }
  // The buffers' memory, one mapping (to page-lock it for device copies).
  void *memory() const { return mapping_; }
  size_t bytes() const { return buffers_.size() * size_; }
  // Calls `ready` with a buffer: now, on this thread, if one is free; else
  // later, on the thread that releases one. (Called from within a `ready`,
  // either hands over after that `ready` returns: no recursion.)
  void Acquire(Ready ready) EXCLUDES(mu_);
  void Release(Buffer *b) EXCLUDES(mu_);
  size_t free_count() EXCLUDES(mu_);

 private:
  // Made by the constructor, constant after: read without a lock.
  const size_t size_;
  void *mapping_ = nullptr;
  std::vector<Buffer> buffers_;
  // Guards the free buffers and the waiters; never held while a waiter's
  // callback runs.
  Mutex mu_;
  std::vector<Buffer *> free_ GUARDED_BY(mu_);
  std::deque<Ready> waiters_ GUARDED_BY(mu_);
};

}  // namespace hixl
