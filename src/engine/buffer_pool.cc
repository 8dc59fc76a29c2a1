#include "engine/buffer_pool.h"

#include <sys/mman.h>

#include "common/log.h"

namespace hixl {
namespace {

// Handing a buffer to a waiter can end in a release of that buffer on the
// same stack (a round that fails at once on a closed link), which hands it
// to the next waiter, and so on: with thousands of waiters that overflowed
// the stack. While a thread is handing out buffers, what it would hand out
// in a nested call is queued here and handed out by the outermost call, one
// after the other.
struct Handoff {
  BufferPool::Ready ready;
  BufferPool::Buffer *buffer;
};
thread_local std::deque<Handoff> *tl_handoffs = nullptr;

void Deliver(BufferPool::Ready ready, BufferPool::Buffer *b) {
  if (tl_handoffs != nullptr) {
    tl_handoffs->push_back({std::move(ready), b});
    return;
  }
  std::deque<Handoff> queued;
  tl_handoffs = &queued;
  struct Reset {
    ~Reset() { tl_handoffs = nullptr; }  // also if a callback throws
  } reset;
  ready(b);
  while (!queued.empty()) {
    Handoff h = std::move(queued.front());
    queued.pop_front();
    h.ready(h.buffer);
  }
}

}  // namespace

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
    MutexLock lock(&mu_);
    if (free_.empty()) {
      waiters_.push_back(std::move(ready));
      return;
    }
    b = free_.back();
    free_.pop_back();
  }
  Deliver(std::move(ready), b);
}

void BufferPool::Release(Buffer *b) {
  Ready next;
  {
    MutexLock lock(&mu_);
    if (waiters_.empty()) {
      free_.push_back(b);
      return;
    }
    next = std::move(waiters_.front());
    waiters_.pop_front();
  }
  Deliver(std::move(next), b);  // straight to the oldest waiter
}

size_t BufferPool::free_count() {
  MutexLock lock(&mu_);
  return free_.size();
}

}  // namespace hixl
