#include "transport/tcp/frame_reader.h"

namespace hixl::tcp {

IoResult FrameReader::Next(int fd, Part *done) {
  for (;;) {
    switch (state_) {
      case State::kHeader: {
        if (rx_.size() >= wire::kHeaderSize) {
          *done = Part::kHeader;
          return IoResult::kProgress;
        }
        if (rx_.drained()) return IoResult::kWouldBlock;  // nothing was left a moment ago
        // After a large payload the next is likely large too, and its start
        // should not be copied twice; after small ones, read a run of them.
        IoResult r = rx_.Fill(fd, RxBuffer::HeaderFill(payload_len_));
        if (r != IoResult::kProgress) return r;
        continue;
      }
      case State::kBody:
        *done = Part::kBody;
        return ReadPart(fd, &rx_, &part_, &left_);
      case State::kPayload:
        *done = Part::kPayload;
        return ReadPart(fd, &rx_, &part_, &left_);
      case State::kSkip:
        *done = Part::kSkipped;
        return SkipPart(fd, &rx_, &left_);
    }
  }
}

wire::HeaderError FrameReader::TakeHeader(wire::FrameHeader *h) {
  wire::HeaderError err = wire::DecodeHeader(rx_.data(), h);
  rx_.Consume(wire::kHeaderSize);
  payload_len_ = 0;  // until this frame's payload is expected
  body_.clear();     // a frame without a body has an empty one, not the last one's
  return err;
}

void FrameReader::ExpectBody(uint32_t len) {
  body_.resize(len);
  body_iov_.assign(1, iovec{body_.data(), body_.size()});
  part_.Reset(&body_iov_);
  left_ = len;
  state_ = State::kBody;
}

void FrameReader::ExpectPayload(const std::vector<iovec> *dst, uint64_t len) {
  part_.Reset(dst);
  left_ = len;
  payload_len_ = len;
  state_ = State::kPayload;
}

void FrameReader::SkipPayload(uint64_t len) {
  left_ = len;
  payload_len_ = len;
  state_ = State::kSkip;
}

std::vector<uint8_t> FrameReader::TakeBody() {
  std::vector<uint8_t> b = std::move(body_);
  body_.clear();
  return b;
}

}  // namespace hixl::tcp
