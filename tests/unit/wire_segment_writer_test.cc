// Unit tests for hixl::wire::SegmentWriter (src/wire/messages.h): the
// bodies it writes must be byte-for-byte what EncodeSegments writes for the
// same list, and decode back to it, whatever the `expect` hint.
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl::wire {
namespace {

std::vector<Segment> MakeSegments(size_t count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Segment> segs;
  for (size_t i = 0; i < count; ++i) {
    // Addresses with high bytes set (byte order matters), small lengths so
    // the total stays within kMaxPayload.
    uint64_t addr = (rng() & 0x00ffffffffffff00ull) | 0x8100000000000000ull;
    uint64_t len = 1 + rng() % 4096;
    segs.push_back({addr, len});
  }
  return segs;
}

std::vector<uint8_t> WriteWith(const std::vector<Segment> &segs, size_t expect, std::vector<uint8_t> body = {}) {
  SegmentWriter w(&body, expect);
  for (const Segment &s : segs) w.Add(s.addr, s.len);
  EXPECT_EQ(w.count(), segs.size());
  w.Finish();
  return body;
}

void ExpectDecodesTo(const std::vector<uint8_t> &body, const std::vector<Segment> &segs) {
  std::vector<Segment> got;
  uint64_t total = 0;
  ASSERT_TRUE(DecodeSegments(body.data(), body.size(), &got, &total));
  ASSERT_EQ(got.size(), segs.size());
  uint64_t want_total = 0;
  for (size_t i = 0; i < segs.size(); ++i) {
    EXPECT_EQ(got[i].addr, segs[i].addr) << "segment " << i;
    EXPECT_EQ(got[i].len, segs[i].len) << "segment " << i;
    want_total += segs[i].len;
  }
  EXPECT_EQ(total, want_total);
}

TEST(SegmentWriterTest, MatchesEncodeSegmentsForEveryCountAndHint) {
  for (size_t count : {1u, 2u, 63u, 64u, 65u, 100u, 8192u}) {
    const std::vector<Segment> segs = MakeSegments(count, static_cast<uint32_t>(count));
    std::vector<uint8_t> want;
    EncodeSegments(segs.data(), segs.size(), &want);
    ASSERT_EQ(want.size(), SegmentsBodySize(count));
    // No hint, a hint too small (the writer must grow, possibly many
    // times), exact, and too big (Finish trims).
    for (size_t expect : {size_t{0}, size_t{1}, count / 2, count - 1, count, count + 1, 2 * count + 17}) {
      SCOPED_TRACE(testing::Message() << "count " << count << ", expect " << expect);
      std::vector<uint8_t> body = WriteWith(segs, expect);
      EXPECT_EQ(body.size(), SegmentsBodySize(count));
      EXPECT_EQ(body, want);
      ExpectDecodesTo(body, segs);
    }
  }
}

TEST(SegmentWriterTest, CountIsLittleEndianInTheFirstFourBytes) {
  const std::vector<Segment> segs = MakeSegments(0x0102 + 3, 9);
  std::vector<uint8_t> body = WriteWith(segs, 16);
  ASSERT_GE(body.size(), 4u);
  EXPECT_EQ(body[0], 0x05);
  EXPECT_EQ(body[1], 0x01);
  EXPECT_EQ(body[2], 0x00);
  EXPECT_EQ(body[3], 0x00);
  // First segment right after: little-endian addr then len.
  uint64_t addr = 0;
  for (int i = 7; i >= 0; --i) addr = (addr << 8) | body[4 + i];
  EXPECT_EQ(addr, segs[0].addr);
}

TEST(SegmentWriterTest, OverwritesWhatTheBodyHeldBefore) {
  // The planner reuses a moved-from vector; stale contents (shorter or
  // longer than the new body) must not leak into it.
  const std::vector<Segment> segs = MakeSegments(100, 5);
  std::vector<uint8_t> want;
  EncodeSegments(segs.data(), segs.size(), &want);
  for (size_t stale : {size_t{3}, size_t{100}, size_t{100000}}) {
    for (size_t expect : {size_t{0}, size_t{100}, size_t{1000}}) {
      SCOPED_TRACE(testing::Message() << "stale " << stale << ", expect " << expect);
      std::vector<uint8_t> body = WriteWith(segs, expect, std::vector<uint8_t>(stale, 0xee));
      EXPECT_EQ(body, want);
    }
  }
}

TEST(SegmentWriterTest, ReusedByMoveAssignmentLikeThePlanner) {
  // PlanFrames moves each finished body out and assigns a fresh writer on
  // the same vector.
  std::vector<uint8_t> body;
  SegmentWriter w(&body, 4);
  std::vector<std::vector<uint8_t>> bodies;
  std::vector<std::vector<Segment>> lists;
  for (size_t round = 0; round < 5; ++round) {
    std::vector<Segment> segs = MakeSegments(1 + round * 37, static_cast<uint32_t>(round));
    for (const Segment &s : segs) w.Add(s.addr, s.len);
    w.Finish();
    bodies.push_back(std::move(body));
    lists.push_back(segs);
    w = SegmentWriter(&body, round + 1);
  }
  for (size_t i = 0; i < bodies.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "round " << i);
    std::vector<uint8_t> want;
    EncodeSegments(lists[i].data(), lists[i].size(), &want);
    EXPECT_EQ(bodies[i], want);
    ExpectDecodesTo(bodies[i], lists[i]);
  }
}

TEST(SegmentWriterTest, ExtremeValuesRoundTrip) {
  const std::vector<Segment> segs = {{0, 1}, {UINT64_MAX - kMaxPayload, kMaxPayload}, {0x0123456789abcdefull, 2}};
  // The total exceeds kMaxPayload, so check bytes against the encoder only.
  std::vector<uint8_t> want;
  EncodeSegments(segs.data(), segs.size(), &want);
  EXPECT_EQ(WriteWith(segs, 0), want);
  std::vector<Segment> two(segs.begin() + 1, segs.end() - 1);
  ExpectDecodesTo(WriteWith(two, 0), two);
}

TEST(SegmentWriterTest, EmptyWriterGivesAnUndecodableBody) {
  // Zero segments is never a valid request body; the writer still writes a
  // well-formed count of 0.
  std::vector<uint8_t> body = WriteWith({}, 10);
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body, std::vector<uint8_t>({0, 0, 0, 0}));
  std::vector<Segment> got;
  uint64_t total = 0;
  EXPECT_FALSE(DecodeSegments(body.data(), body.size(), &got, &total));
}

}  // namespace
}  // namespace hixl::wire
