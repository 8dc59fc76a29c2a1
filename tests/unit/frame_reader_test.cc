// Unit tests for FrameReader (src/transport/tcp/frame_reader.h), the receive
// side both stream kinds share: frames written into one end of an AF_UNIX
// socketpair, read back part by part from the other.
#include "transport/tcp/frame_reader.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace hixl::tcp {
namespace {

using Part = FrameReader::Part;

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto &b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> Frame(wire::MsgType type, uint64_t id, const std::vector<uint8_t> &body,
                           const std::vector<uint8_t> &payload) {
  wire::FrameHeader h;
  h.type = type;
  h.req_id = id;
  h.body_len = static_cast<uint32_t>(body.size());
  h.payload_len = payload.size();
  std::vector<uint8_t> out(wire::kHeaderSize);
  wire::EncodeHeader(h, out.data());
  out.insert(out.end(), body.begin(), body.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

class FrameReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
    int big = 8 << 20;
    setsockopt(fds_[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    setsockopt(fds_[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  }
  void TearDown() override {
    close(fds_[0]);
    close(fds_[1]);
  }
  void Put(const std::vector<uint8_t> &bytes) {
    ASSERT_EQ(send(fds_[0], bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }
  // Next(), with everything it needs already written: it must complete a part.
  Part NextPart() {
    Part done = Part::kHeader;
    reader_.Rearm();
    EXPECT_EQ(reader_.Next(fds_[1], &done), IoResult::kProgress);
    return done;
  }
  wire::FrameHeader Header() {
    EXPECT_EQ(NextPart(), Part::kHeader);
    wire::FrameHeader h;
    EXPECT_EQ(reader_.TakeHeader(&h), wire::HeaderError::kOk);
    return h;
  }

  int fds_[2] = {-1, -1};
  FrameReader reader_;
};

TEST_F(FrameReaderTest, ReadsHeaderBodyAndPayloadOfBackToBackFrames) {
  auto body = Pattern(20, 1);
  auto payload = Pattern(100000, 2);  // large: goes straight to its place
  auto small = Pattern(300, 3);       // small: comes through the buffer
  auto f1 = Frame(wire::MsgType::kWriteReq, 7, body, payload);
  auto f2 = Frame(wire::MsgType::kWriteReq, 8, body, small);
  auto f3 = Frame(wire::MsgType::kPing, 9, {}, {});
  std::vector<uint8_t> all = f1;
  all.insert(all.end(), f2.begin(), f2.end());
  all.insert(all.end(), f3.begin(), f3.end());
  Put(all);

  std::vector<uint8_t> got(payload.size());
  std::vector<iovec> dst = {{got.data(), 1000}, {got.data() + 1000, got.size() - 1000}};
  wire::FrameHeader h = Header();
  EXPECT_EQ(h.req_id, 7u);
  ASSERT_EQ(h.body_len, body.size());
  reader_.ExpectBody(h.body_len);
  EXPECT_TRUE(reader_.mid_frame());
  ASSERT_EQ(NextPart(), Part::kBody);
  EXPECT_EQ(reader_.body(), body);
  reader_.ExpectPayload(&dst, h.payload_len);
  ASSERT_EQ(NextPart(), Part::kPayload);
  EXPECT_EQ(got, payload);
  reader_.ExpectHeader();

  h = Header();
  EXPECT_EQ(h.req_id, 8u);
  reader_.ExpectBody(h.body_len);
  ASSERT_EQ(NextPart(), Part::kBody);
  std::vector<uint8_t> got_small(small.size());
  std::vector<iovec> dst_small = {{got_small.data(), got_small.size()}};
  reader_.ExpectPayload(&dst_small, h.payload_len);
  ASSERT_EQ(NextPart(), Part::kPayload);
  EXPECT_EQ(got_small, small);
  reader_.ExpectHeader();

  h = Header();
  EXPECT_EQ(h.req_id, 9u);
  EXPECT_EQ(h.type, wire::MsgType::kPing);
  EXPECT_TRUE(reader_.body().empty());
  EXPECT_FALSE(reader_.mid_frame());  // the PING had no body and nothing follows
  Part done;
  reader_.Rearm();
  EXPECT_EQ(reader_.Next(fds_[1], &done), IoResult::kWouldBlock);
}

TEST_F(FrameReaderTest, AFrameWithoutBodyDoesNotSeeTheBodyOfTheFrameBefore) {
  // A hostile peer sends a WRITE with a segment list, then a READ without
  // one: the target must see an empty body (and refuse it), not the
  // previous frame's segments.
  auto segs = Pattern(20, 4);
  Put(Frame(wire::MsgType::kReadReq, 1, segs, {}));
  Put(Frame(wire::MsgType::kReadReq, 2, {}, {}));
  wire::FrameHeader h = Header();
  reader_.ExpectBody(h.body_len);
  ASSERT_EQ(NextPart(), Part::kBody);
  EXPECT_EQ(reader_.body(), segs);
  reader_.ExpectHeader();
  h = Header();
  EXPECT_EQ(h.req_id, 2u);
  EXPECT_EQ(h.body_len, 0u);
  EXPECT_TRUE(reader_.body().empty());
}

TEST_F(FrameReaderTest, SkipsARefusedPayloadAndKeepsTheNextFrame) {
  auto payload = Pattern(70000, 5);
  Put(Frame(wire::MsgType::kWriteReq, 1, Pattern(20, 6), payload));
  Put(Frame(wire::MsgType::kPing, 2, {}, {}));
  wire::FrameHeader h = Header();
  reader_.ExpectBody(h.body_len);
  ASSERT_EQ(NextPart(), Part::kBody);
  reader_.SkipPayload(h.payload_len);
  ASSERT_EQ(NextPart(), Part::kSkipped);
  reader_.ExpectHeader();
  h = Header();
  EXPECT_EQ(h.req_id, 2u);
}

TEST_F(FrameReaderTest, SkipRestOfPayloadDropsWhatIsLeftOfAPayloadCutByEagain) {
  auto payload = Pattern(200000, 7);
  auto frame = Frame(wire::MsgType::kReadResp, 1, {}, payload);
  const size_t first = wire::kHeaderSize + 50000;
  Put(std::vector<uint8_t>(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(first)));
  std::vector<uint8_t> got(payload.size(), 0);
  std::vector<iovec> dst = {{got.data(), got.size()}};
  wire::FrameHeader h = Header();
  reader_.ExpectPayload(&dst, h.payload_len);
  Part done;
  reader_.Rearm();
  ASSERT_EQ(reader_.Next(fds_[1], &done), IoResult::kWouldBlock);  // the rest has not come yet
  reader_.SkipRestOfPayload();  // the request was cancelled meanwhile
  Put(std::vector<uint8_t>(frame.begin() + static_cast<std::ptrdiff_t>(first), frame.end()));
  Put(Frame(wire::MsgType::kPong, 2, {}, {}));
  ASSERT_EQ(NextPart(), Part::kSkipped);
  // What came before the cancel landed; nothing after it did.
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + 50000, payload.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + 50000, got.end(), [](uint8_t b) { return b == 0; }));
  reader_.ExpectHeader();
  h = Header();
  EXPECT_EQ(h.req_id, 2u);
  EXPECT_EQ(h.type, wire::MsgType::kPong);
}

TEST_F(FrameReaderTest, ReportsHalfAFrameAndTheEndOfTheStream) {
  auto frame = Frame(wire::MsgType::kPing, 1, {}, {});
  Put(std::vector<uint8_t>(frame.begin(), frame.begin() + 10));
  Part done;
  reader_.Rearm();
  EXPECT_EQ(reader_.Next(fds_[1], &done), IoResult::kWouldBlock);
  EXPECT_TRUE(reader_.mid_frame());  // ten bytes of a header are buffered
  shutdown(fds_[0], SHUT_WR);
  reader_.Rearm();
  EXPECT_EQ(reader_.Next(fds_[1], &done), IoResult::kEof);
}

TEST_F(FrameReaderTest, ABadHeaderIsReportedAndConsumed) {
  auto frame = Frame(wire::MsgType::kPing, 1, {}, {});
  frame[0] ^= 0xff;  // magic
  Put(frame);
  ASSERT_EQ(NextPart(), Part::kHeader);
  wire::FrameHeader h;
  EXPECT_EQ(reader_.TakeHeader(&h), wire::HeaderError::kBadMagic);
}

}  // namespace
}  // namespace hixl::tcp
