// frame_reader.h: the receiving half of a stream, for both kinds of stream.
// It reads one frame at a time (header, body, payload) with as few syscalls
// as the data allows: small frames come in runs through a receive buffer,
// large payloads go straight to where they belong, and the read that ends a
// payload also takes the next frame's header.
//
// The reader knows the framing, not the meaning: after each part the stream
// says what comes next (a body of so many bytes, a payload into these
// iovecs, a payload to drop, or the next header), having checked the header
// first: nothing here trusts the peer.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "transport/tcp/iov.h"
#include "wire/frame.h"

namespace hixl::tcp {

class FrameReader {
 public:
  enum class Part {
    kHeader,   // a header is buffered: call TakeHeader
    kBody,     // the body is in body()
    kPayload,  // the payload is in its iovecs
    kSkipped,  // the payload was read and dropped
  };

  // Reads until a part is complete (kProgress; *done says which), the socket
  // has nothing more for now (kWouldBlock), the peer closed (kEof) or reading
  // failed (kError, errno kept). After each completed part the caller says
  // what comes next before calling again.
  IoResult Next(int fd, Part *done);
  // The socket was reported readable: read even if the last read came back
  // short (see RxBuffer::drained).
  void Rearm() { rx_.Rearm(); }

  // Decodes and consumes the buffered header (after Part::kHeader); body()
  // is empty until ExpectBody.
  wire::HeaderError TakeHeader(wire::FrameHeader *h);

  // What comes next.
  void ExpectHeader() { state_ = State::kHeader; }
  void ExpectBody(uint32_t len);                                  // len > 0
  void ExpectPayload(const std::vector<iovec> *dst, uint64_t len);  // dst outlives the read
  void SkipPayload(uint64_t len);
  // If a payload is being received, the rest of it is dropped instead (a
  // cancelled READ whose reply is arriving).
  void SkipRestOfPayload() {
    if (state_ == State::kPayload) state_ = State::kSkip;
  }

  std::vector<uint8_t> &body() { return body_; }
  std::vector<uint8_t> TakeBody();  // leaves body() empty
  // Between frames: frees the room a large body once needed.
  void TrimBody() {
    if (state_ == State::kHeader) std::vector<uint8_t>().swap(body_);
  }
  // True when the next part to read is a header.
  bool at_header() const { return state_ == State::kHeader; }
  // True when part of a frame has been read (for "closed mid-frame").
  bool mid_frame() const { return state_ != State::kHeader || rx_.size() > 0; }

 private:
  enum class State { kHeader, kBody, kPayload, kSkip };

  State state_ = State::kHeader;
  RxBuffer rx_;
  std::vector<uint8_t> body_;
  std::vector<iovec> body_iov_;
  IovCursor part_;
  size_t left_ = 0;           // bytes of the current part still to read
  uint64_t payload_len_ = 0;  // of the current frame (while at_header: of the one before)
};

}  // namespace hixl::tcp
