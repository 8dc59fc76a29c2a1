#include "transport/tcp/iov.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hixl::tcp {

void IovCursor::Reset(const std::vector<iovec> *v) {
  v_ = v;
  idx_ = 0;
  off_ = 0;
  total_ = v == nullptr ? 0 : IovBytes(*v);
  left_ = total_;
  while (v_ != nullptr && idx_ < v_->size() && (*v_)[idx_].iov_len == 0) ++idx_;
}

size_t IovCursor::Gather(iovec *out, size_t max_iov) const {
  size_t n = 0;
  for (size_t i = idx_; v_ != nullptr && i < v_->size() && n < max_iov; ++i) {
    const iovec &src = (*v_)[i];
    size_t skip = i == idx_ ? off_ : 0;
    if (src.iov_len == skip) continue;
    out[n].iov_base = static_cast<uint8_t *>(src.iov_base) + skip;
    out[n].iov_len = src.iov_len - skip;
    ++n;
  }
  return n;
}

void IovCursor::Advance(size_t bytes) {
  left_ -= bytes;
  while (bytes > 0) {
    size_t room = (*v_)[idx_].iov_len - off_;
    if (bytes < room) {
      off_ += bytes;
      return;
    }
    bytes -= room;
    ++idx_;
    off_ = 0;
  }
  while (idx_ < v_->size() && (*v_)[idx_].iov_len == 0) ++idx_;
}

size_t IovBytes(const std::vector<iovec> &v) {
  size_t sum = 0;
  for (const auto &e : v) {
    if (sum + e.iov_len < sum) return SIZE_MAX;
    sum += e.iov_len;
  }
  return sum;
}

void GatherInto(const std::vector<iovec> &src, uint8_t *dst) {
  for (const auto &v : src) {
    std::memcpy(dst, v.iov_base, v.iov_len);
    dst += v.iov_len;
  }
}

void ScatterFrom(const uint8_t *src, const std::vector<iovec> &dst) {
  for (const auto &v : dst) {
    std::memcpy(v.iov_base, src, v.iov_len);
    src += v.iov_len;
  }
}

void RxBuffer::Compact() {
  if (head_ == tail_) {
    head_ = tail_ = 0;
  } else if (head_ > buf_.size() / 2) {
    std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
    tail_ -= head_;
    head_ = 0;
  }
}

iovec RxBuffer::Room(size_t max) {
  Compact();
  return iovec{buf_.data() + tail_, std::min(buf_.size() - tail_, max)};
}

IoResult RxBuffer::Fill(int fd, size_t max) {
  Compact();
  if (tail_ == buf_.size()) return IoResult::kProgress;  // full; caller consumes first
  const size_t asked = std::min(buf_.size() - tail_, max);
  for (;;) {
    ssize_t n = recv(fd, buf_.data() + tail_, asked, 0);
    if (n > 0) {
      tail_ += static_cast<size_t>(n);
      NoteRead(static_cast<size_t>(n), asked);
      return IoResult::kProgress;
    }
    if (n == 0) return IoResult::kEof;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::kWouldBlock : IoResult::kError;
  }
}

void RxBuffer::Consume(size_t n) { head_ += n; }

size_t RxBuffer::TakeInto(IovCursor *dst, size_t max) {
  size_t want = std::min({max, size(), dst->left()});
  size_t done = 0;
  iovec iov[16];
  while (done < want) {
    size_t k = dst->Gather(iov, 16);
    size_t step = 0;
    for (size_t i = 0; i < k && done + step < want; ++i) {
      size_t c = std::min(iov[i].iov_len, want - done - step);
      std::memcpy(iov[i].iov_base, data() + done + step, c);
      step += c;
    }
    dst->Advance(step);
    done += step;
  }
  Consume(done);
  return done;
}

IoResult ReadPart(int fd, RxBuffer *rx, IovCursor *dst, size_t *left) {
  constexpr size_t kDirectThreshold = 4096;
  for (;;) {
    if (rx->size() > 0) *left -= rx->TakeInto(dst, *left);
    if (*left == 0) return IoResult::kProgress;
    if (*left < kDirectThreshold) {
      // Enough for this part and a run of small frames after it, not so
      // much that a large payload behind it is copied twice.
      IoResult r = rx->Fill(fd, *left + RxBuffer::kHeaderFill);
      if (r != IoResult::kProgress) return r;
      continue;
    }
    iovec iov[kMaxIov];
    size_t n = dst->Gather(iov, kMaxIov - 1);  // one left for rx
    size_t want = 0;
    for (size_t i = 0; i < n; ++i) {
      iov[i].iov_len = std::min(iov[i].iov_len, *left - want);
      want += iov[i].iov_len;
    }
    // rx is empty here (TakeInto drained it): the next frame's header, and
    // maybe more, lands there in the same call.
    iov[n] = rx->Room(RxBuffer::kReadAhead);
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n + (iov[n].iov_len > 0 ? 1 : 0);
    ssize_t got = recvmsg(fd, &msg, 0);
    if (got > 0) {
      size_t g = std::min(static_cast<size_t>(got), want);
      dst->Advance(g);
      *left -= g;
      rx->Commit(static_cast<size_t>(got) - g);
      rx->NoteRead(static_cast<size_t>(got), want + iov[n].iov_len);
      continue;
    }
    if (got == 0) return IoResult::kEof;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::kWouldBlock : IoResult::kError;
  }
}

IoResult SkipPart(int fd, RxBuffer *rx, size_t *left) {
  thread_local std::vector<uint8_t> scratch(64 * 1024);
  std::vector<iovec> one(1);
  IovCursor c;
  while (*left > 0) {
    size_t step = std::min(*left, scratch.size());
    size_t step_left = step;
    one[0] = iovec{scratch.data(), step};
    c.Reset(&one);
    IoResult r = ReadPart(fd, rx, &c, &step_left);
    *left -= step - step_left;
    if (r != IoResult::kProgress) return r;
  }
  return IoResult::kProgress;
}

}  // namespace hixl::tcp
