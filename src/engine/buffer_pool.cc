#include "engine/buffer_pool.h"

#include <sys/mman.h>

#include "common/log.h"

namespace hixl {

BufferPool::BufferPool(size_t count, size_t size) : size_(size) {
  if (count == 0 || size == 0) return;
  mapping_ = mmap(nullptr, count * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping_ == MAP_FAILED) {
    HIXL_LOGE("BufferPool: cannot map %zu buffers of %zu bytes; the pool is off", count, size);
    mapping_ = nullptr;
    return;
  }
  for (size_t i = 0; i < count; ++i) buffers_.push_back({static_cast<uint8_t *>(mapping_) + i * size, size});
  for (auto &b : buffers_) free_.push_back(&b);
}

BufferPool::~BufferPool() {
  if (mapping_ != nullptr) munmap(mapping_, buffers_.size() * size_);
}

void BufferPool::Acquire(Ready ready) {
  Buffer *b = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      waiters_.push_back(std::move(ready));
      return;
    }
    b = free_.back();
    free_.pop_back();
  }
  ready(b);
}

void BufferPool::Release(Buffer *b) {
  Ready next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiters_.empty()) {
      free_.push_back(b);
      return;
    }
    next = std::move(waiters_.front());
    waiters_.pop_front();
  }
  next(b);  // straight to the oldest waiter
}

size_t BufferPool::free_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return free_.size();
}

}  // namespace hixl
