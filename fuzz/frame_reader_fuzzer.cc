// frame_reader_fuzzer.cc: FrameReader (src/transport/tcp/frame_reader.cc) and
// the header decoder (src/wire/frame.cc) on a stream from a hostile peer.
//
// Input: 4 bytes that seed the schedule, then the stream. The stream goes
// through a socketpair in pieces of random sizes (so reads come back short,
// split a header, end mid-payload), and the reader is driven as the streams
// drive it: header, body, then the payload into scattered buffers, dropped,
// or cut off half-way (a cancelled READ). A model reading the same bytes flat
// says what each part holds: a header that decodes re-encodes to its 32
// bytes, a body and a payload are the bytes at their place, a bad header
// ends the stream (as it closes a real one), and at the end of the stream
// the reader is mid-frame exactly when the model is.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fuzz_check.h"
#include "transport/tcp/frame_reader.h"
#include "wire/frame.h"

namespace {

using hixl::tcp::FrameReader;
using hixl::tcp::IoResult;
using Part = FrameReader::Part;

// Payloads up to this size are received into buffers; larger ones are
// dropped as a target drops a refused WRITE (the input is far smaller).
constexpr uint64_t kMaxKeptPayload = 1u << 20;

struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0); }
  ~SocketPair() {
    close(fd[0]);
    close(fd[1]);
  }
};

class Driver {
 public:
  Driver(const uint8_t *stream, size_t size, uint32_t seed) : s_(stream), size_(size), rng_(seed) {}

  void Run() {
    // Every round sends a byte or the end of the stream, so this many
    // rounds are enough unless the reader stalls.
    for (size_t round = 0; round < size_ + 3; ++round) {
      Feed();
      if (!Drain()) return;
    }
    FUZZ_CHECK(!"the reader never reported the end of the stream");
  }

 private:
  enum class Want { kHeader, kBody, kPayload, kSkip };

  size_t Piece() {
    switch (rng_() % 4) {
      case 0: return 1 + rng_() % 8;
      case 1: return 1 + rng_() % 64;
      case 2: return 1 + rng_() % 2048;
      default: return size_;
    }
  }

  void Feed() {
    if (sent_ < size_) {
      size_t n = std::min(Piece(), size_ - sent_);
      ssize_t got = send(sp_.fd[0], s_ + sent_, n, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (got > 0) sent_ += static_cast<size_t>(got);
    } else if (!closed_) {
      shutdown(sp_.fd[0], SHUT_WR);
      closed_ = true;
    }
  }

  // Reads until the socket has nothing more; false once the stream is over.
  bool Drain() {
    reader_.Rearm();
    for (;;) {
      Part done = Part::kHeader;
      IoResult r = reader_.Next(sp_.fd[1], &done);
      if (r == IoResult::kWouldBlock) {
        MaybeCancel();
        return true;
      }
      FUZZ_CHECK(r != IoResult::kError);
      if (r == IoResult::kEof) {
        FUZZ_CHECK(closed_ && sent_ == size_);
        // At the end, the reader is mid-frame exactly when bytes are left
        // over or a part was begun.
        FUZZ_CHECK(reader_.mid_frame() == (want_ != Want::kHeader || pos_ < size_));
        return false;
      }
      if (!OnPart(done)) return false;
    }
  }

  // A READ cancelled while its reply arrives: the rest of it is dropped.
  void MaybeCancel() {
    if (want_ == Want::kPayload && rng_() % 8 == 0) {
      reader_.SkipRestOfPayload();
      want_ = Want::kSkip;
    }
  }

  bool OnPart(Part done) {
    switch (want_) {
      case Want::kHeader: {
        FUZZ_CHECK(done == Part::kHeader);
        FUZZ_CHECK(size_ - pos_ >= hixl::wire::kHeaderSize);
        hixl::wire::FrameHeader h, model;
        hixl::wire::HeaderError err = reader_.TakeHeader(&h);
        FUZZ_CHECK(err == hixl::wire::DecodeHeader(s_ + pos_, &model));
        if (err != hixl::wire::HeaderError::kOk) return false;  // a bad header closes the stream
        FUZZ_CHECK(h.type == model.type && h.status == model.status && h.body_len == model.body_len &&
                   h.req_id == model.req_id && h.payload_len == model.payload_len);
        FUZZ_CHECK(h.body_len <= hixl::wire::kMaxBody && h.payload_len <= hixl::wire::kMaxPayload);
        uint8_t again[hixl::wire::kHeaderSize];
        hixl::wire::EncodeHeader(h, again);
        FUZZ_CHECK(std::memcmp(again, s_ + pos_, sizeof(again)) == 0);
        FUZZ_CHECK(reader_.body().empty());
        pos_ += hixl::wire::kHeaderSize;
        payload_len_ = h.payload_len;
        if (h.body_len > 0) {
          reader_.ExpectBody(h.body_len);
          want_ = Want::kBody;
        } else {
          ExpectPayload();
        }
        return true;
      }
      case Want::kBody: {
        FUZZ_CHECK(done == Part::kBody);
        std::vector<uint8_t> body = rng_() % 2 ? reader_.TakeBody() : reader_.body();
        FUZZ_CHECK(body.size() <= size_ - pos_);
        FUZZ_CHECK(std::equal(body.begin(), body.end(), s_ + pos_));
        pos_ += body.size();
        ExpectPayload();
        return true;
      }
      case Want::kPayload:
        FUZZ_CHECK(done == Part::kPayload);
        FUZZ_CHECK(payload_.size() <= size_ - pos_);
        FUZZ_CHECK(std::equal(payload_.begin(), payload_.end(), s_ + pos_));
        pos_ += payload_.size();
        ExpectHeader();
        return true;
      case Want::kSkip:
        FUZZ_CHECK(done == Part::kSkipped);
        FUZZ_CHECK(payload_len_ <= size_ - pos_);
        pos_ += payload_len_;
        ExpectHeader();
        return true;
    }
    return false;
  }

  void ExpectPayload() {
    if (payload_len_ == 0) return ExpectHeader();
    if (payload_len_ > kMaxKeptPayload || rng_() % 4 == 0) {
      reader_.SkipPayload(payload_len_);
      want_ = Want::kSkip;
      return;
    }
    // Into up to four pieces, some maybe empty, as a scattered batch is.
    payload_.assign(payload_len_, 0);
    iov_.clear();
    size_t at = 0;
    for (int i = 0; i < 3 && at < payload_.size(); ++i) {
      size_t n = rng_() % (payload_.size() - at + 1);
      iov_.push_back({payload_.data() + at, n});
      at += n;
    }
    iov_.push_back({payload_.data() + at, payload_.size() - at});
    reader_.ExpectPayload(&iov_, payload_len_);
    want_ = Want::kPayload;
  }

  void ExpectHeader() {
    reader_.ExpectHeader();
    if (rng_() % 2) reader_.TrimBody();
    want_ = Want::kHeader;
  }

  const uint8_t *s_;
  size_t size_;
  std::minstd_rand rng_;
  SocketPair sp_;
  FrameReader reader_;
  size_t sent_ = 0;     // bytes of the stream sent
  bool closed_ = false;  // the sending side is shut
  size_t pos_ = 0;      // the model: bytes of the stream the reader has handed out
  Want want_ = Want::kHeader;
  uint64_t payload_len_ = 0;  // of the current frame
  std::vector<uint8_t> payload_;
  std::vector<iovec> iov_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  uint32_t seed;
  std::memcpy(&seed, data, 4);
  Driver(data + 4, size - 4, seed).Run();
  return 0;
}
