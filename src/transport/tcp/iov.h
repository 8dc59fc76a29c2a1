// iov.h: scatter/gather helpers for the TCP streams: a cursor that walks a
// list of iovecs, and a small receive buffer that lets one recv() pick up
// several small frames while large payloads go straight to their destination.
#pragma once

#include <sys/uio.h>

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <cstdint>
#include <vector>

#include "common/mutex.h"

namespace hixl::tcp {

// At most this many iovecs per sendmsg/recvmsg (Linux's UIO_MAXIOV).
constexpr size_t kMaxIov = 1024;

class IovCursor {
 public:
  IovCursor() = default;
  explicit IovCursor(const std::vector<iovec> *v) { Reset(v); }
  void Reset(const std::vector<iovec> *v);
  bool done() const { return left_ == 0; }
  size_t left() const { return left_; }
  bool started() const { return left_ != total_; }
  // Writes up to max_iov iovecs covering what is left; returns how many.
  size_t Gather(iovec *out, size_t max_iov) const;
  void Advance(size_t bytes);

 private:
  const std::vector<iovec> *v_ = nullptr;
  size_t idx_ = 0;
  size_t off_ = 0;
  size_t left_ = 0;
  size_t total_ = 0;
};

// Sums iov_len; saturates instead of wrapping.
size_t IovBytes(const std::vector<iovec> &v);

// A byte buffer that is not zero-filled (it is always written before it is
// read) and keeps its storage when shrunk.
class ByteBuffer {
 public:
  void Resize(size_t n) {
    if (n > cap_) {
      p_.reset(new uint8_t[n]);
      cap_ = n;
    }
    size_ = n;
  }
  uint8_t *data() { return p_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }

 private:
  std::unique_ptr<uint8_t[]> p_;
  size_t size_ = 0;
  size_t cap_ = 0;
};

// A few ByteBuffers kept for reuse: staging buffers are needed per frame,
// and fresh large allocations cost page faults every time.
class BufferCache {
 public:
  ByteBuffer Take(size_t n) {
    ByteBuffer b;
    {
      MutexLock lock(&mu_);
      if (!free_.empty()) {
        b = std::move(free_.back());
        free_.pop_back();
        kept_bytes_ -= b.capacity();
      }
    }
    b.Resize(n);
    return b;
  }
  void Give(ByteBuffer &&b) {
    if (b.capacity() == 0 || b.capacity() > kMaxKept) return;
    MutexLock lock(&mu_);
    if (free_.size() < kMaxCount && kept_bytes_ + b.capacity() <= kMaxKeptBytes) {
      kept_bytes_ += b.capacity();
      free_.push_back(std::move(b));
    }
  }
  size_t kept_bytes() {
    MutexLock lock(&mu_);
    return kept_bytes_;
  }
  // Frees what is kept (outside the lock).
  void Clear() {
    std::vector<ByteBuffer> drop;
    MutexLock lock(&mu_);
    drop.swap(free_);
    kept_bytes_ = 0;
  }

  static constexpr size_t kMaxCount = 32;
  static constexpr size_t kMaxKept = 8u << 20;
  // One per stream: an idle stream (of hundreds, on a server) must not sit
  // on what a burst of small-segment frames once needed.
  static constexpr size_t kMaxKeptBytes = 16u << 20;

 private:
  // Guards the buffers kept: callers take them as they plan frames, and
  // whichever thread completes a frame gives its buffer back.
  Mutex mu_;
  std::vector<ByteBuffer> free_ GUARDED_BY(mu_);
  size_t kept_bytes_ GUARDED_BY(mu_) = 0;  // capacity of free_
};

// Small segments cost the kernel more per iovec than a memcpy costs per
// byte: a frame whose segments average at most this many bytes is copied
// into (or out of) one contiguous buffer and moved with a single iovec.
constexpr size_t kCoalesceAvgBytes = 1024;
// No copy beyond this size (our own frames are at most 4 MiB): a peer's
// READ of 65536 segments over the same KiB would otherwise make the target
// allocate 64 MiB for a 1 MiB request.
constexpr size_t kCoalesceMaxBytes = 4u << 20;
inline bool Coalesce(size_t bytes, size_t segments) {
  return segments > 1 && bytes <= kCoalesceAvgBytes * segments && bytes <= kCoalesceMaxBytes;
}
// Copies the bytes `src` describes into `dst` (IovBytes(src) bytes).
void GatherInto(const std::vector<iovec> &src, uint8_t *dst);
// Copies IovBytes(dst) bytes from `src` to where `dst` says.
void ScatterFrom(const uint8_t *src, const std::vector<iovec> &dst);

// Result of a non-blocking read or write step.
enum class IoResult { kProgress, kWouldBlock, kEof, kError };

class RxBuffer {
 public:
  // recv() into the free space, at most `max` bytes. kEof on orderly
  // close; errno kept on kError.
  IoResult Fill(int fd, size_t max = SIZE_MAX);
  // What to read when a header is next: enough to catch a run of small
  // frames (replies are 32 bytes) in one recv, little enough that the start
  // of a large payload is not copied twice (into here, then to its place).
  static constexpr size_t kHeaderFill = 2048;
  // What a large part's read also takes of what follows it: a header and a
  // one-segment list (32 + 20 bytes), so that back-to-back frames cost one
  // syscall each, while little of a following payload is copied twice (the
  // first touch of a destination's cache lines is what that copy costs).
  static constexpr size_t kReadAhead = 64;
  // How much to read for a header, given the payload of the frame before:
  // after a large one the next is likely large too, and its start should
  // not be copied twice; after small ones, a run of them comes in one recv.
  static size_t HeaderFill(uint64_t previous_payload) {
    return previous_payload >= (16u << 10) ? kReadAhead : kHeaderFill;
  }
  const uint8_t *data() const { return buf_.data() + head_; }
  size_t size() const { return tail_ - head_; }
  void Consume(size_t n);
  // Copies up to `max` buffered bytes into `dst`, advancing both.
  size_t TakeInto(IovCursor *dst, size_t max);
  // True when the last read came back short: the socket had nothing more
  // then, and with level-triggered polling there is no point in asking again
  // (a syscall that fails with EAGAIN) before the next readiness report,
  // which is when the reader calls Rearm().
  bool drained() const { return drained_; }
  void Rearm() { drained_ = false; }
  void NoteRead(size_t got, size_t asked) { drained_ = got < asked; }
  // Free space to read into directly, at most `max` bytes; Commit(n) keeps
  // the n bytes read there.
  iovec Room(size_t max);
  void Commit(size_t n) { tail_ += n; }

 private:
  void Compact();

  std::array<uint8_t, 16384> buf_{};
  size_t head_ = 0;
  size_t tail_ = 0;
  bool drained_ = false;
};

// Reads `*left` more bytes of a frame part into `dst`, first from `rx`, then
// with recvmsg straight into the destination (large parts, and up to
// kReadAhead bytes of whatever follows them into `rx`) or through `rx` (small ones, so that the next
// header comes in the same syscall). Stops at EAGAIN. Returns kProgress once
// *left reaches 0.
IoResult ReadPart(int fd, RxBuffer *rx, IovCursor *dst, size_t *left);
// Like ReadPart, but drops the bytes (a refused or cancelled payload).
IoResult SkipPart(int fd, RxBuffer *rx, size_t *left);

// Sends what the socket takes from the cursors cursor_at(0..n-1), in order,
// gathering up to kMaxIov pieces per sendmsg. Returns kProgress when all were
// sent, kWouldBlock when the socket is full, kError (errno kept) otherwise.
template <typename CursorAt>
IoResult SendCursors(int fd, size_t n, CursorAt cursor_at) {
  size_t first = 0;  // cursors before this one are done
  while (first < n) {
    iovec iov[kMaxIov];
    size_t k = 0;
    size_t bytes = 0;
    for (size_t i = first; i < n && k < kMaxIov; ++i) {
      size_t m = cursor_at(i)->Gather(iov + k, kMaxIov - k);
      for (size_t j = k; j < k + m; ++j) bytes += iov[j].iov_len;
      k += m;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = k;
    ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::kWouldBlock : IoResult::kError;
    }
    auto left = static_cast<size_t>(sent);
    while (left > 0) {
      IovCursor *c = cursor_at(first);
      size_t step = std::min(left, c->left());
      c->Advance(step);
      left -= step;
      if (c->done()) ++first;
    }
    while (first < n && cursor_at(first)->done()) ++first;
    if (static_cast<size_t>(sent) < bytes) return IoResult::kWouldBlock;  // socket buffer full
  }
  return IoResult::kProgress;
}

}  // namespace hixl::tcp
