// Unit tests for hixl::tcp::PlanFrames (src/transport/tcp/frame_planner.h):
// how a batch is cut into frames for a link's streams. WRITE frames of small
// segments copy the user's bytes into staging buffers, so the local side of
// every batch here is real memory.
#include "transport/tcp/frame_planner.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/completion.h"
#include "transport/channel.h"
#include "transport/tcp/initiator_stream.h"
#include "transport/tcp/iov.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl::tcp {
namespace {

using Frames = std::vector<std::vector<std::unique_ptr<Request>>>;

// Pseudo-random bytes, cheap enough for tens of MiB in a Debug build.
std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed);
  return v;
}

struct Caches {
  explicit Caches(size_t n) {
    for (size_t i = 0; i < n; ++i) owned.push_back(std::make_unique<BufferCache>());
    for (auto &c : owned) ptrs.push_back(c.get());
  }
  std::vector<std::unique_ptr<BufferCache>> owned;
  std::vector<BufferCache *> ptrs;
};

// The frames in the order they were planned: frame k went to stream
// (first + k) % ns as that stream's (k / ns)-th frame. Fails the test if the
// per-stream counts do not fit a round-robin deal.
std::vector<Request *> InPlanOrder(const Frames &frames, size_t first) {
  const size_t ns = frames.size();
  size_t total = 0;
  for (const auto &s : frames) total += s.size();
  std::vector<Request *> out;
  for (size_t k = 0; k < total; ++k) {
    const auto &stream = frames[(first + k) % ns];
    const size_t pos = k / ns;
    if (pos >= stream.size()) {
      ADD_FAILURE() << "frame " << k << " should be on stream " << (first + k) % ns << " at " << pos
                    << " but that stream has " << stream.size() << " frames";
      return {};
    }
    out.push_back(stream[pos].get());
  }
  return out;
}

struct FrameInfo {
  std::vector<wire::Segment> segs;
  uint64_t bytes = 0;
  bool small = false;
};

// Checks every invariant of a plan of `pieces`; `infos` gets each frame's
// segments (in plan order).
void CheckPlanInto(bool is_write, const std::vector<Piece> &pieces, size_t first, const Frames &frames,
                   const std::shared_ptr<Completion> &done, std::vector<FrameInfo> *infos) {
  infos->clear();
  std::vector<Request *> order = InPlanOrder(frames, first);
  if (::testing::Test::HasFailure()) return;

  // Cursor over the pieces: remote side from the bodies, local side from
  // the iovecs, both must walk the pieces exactly once, in order.
  size_t pi = 0;
  size_t off = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    SCOPED_TRACE(testing::Message() << "frame " << k);
    Request &r = *order[k];
    EXPECT_EQ(r.type, is_write ? wire::MsgType::kWriteReq : wire::MsgType::kReadReq);
    EXPECT_EQ(r.done, done);
    FrameInfo fi;
    ASSERT_TRUE(wire::DecodeSegments(r.body.data(), r.body.size(), &fi.segs, &fi.bytes)) << "body does not decode";
    EXPECT_LE(fi.segs.size(), kMaxFrameSegments);
    EXPECT_LE(fi.bytes, kMaxFrameBytes);
    fi.small = Coalesce(fi.bytes, fi.segs.size());

    // The local side of each segment, as the pieces say it must be.
    std::vector<iovec> expect_local;
    for (const wire::Segment &s : fi.segs) {
      ASSERT_LT(pi, pieces.size()) << "more segments than the pieces hold";
      const Piece &p = pieces[pi];
      EXPECT_EQ(s.addr, p.remote + off);
      ASSERT_LE(s.len, p.len - off) << "segment runs past its piece";
      expect_local.push_back({reinterpret_cast<void *>(p.local + off), s.len});
      off += s.len;
      if (off == p.len) {
        ++pi;
        off = 0;
      }
    }

    if (is_write) {
      EXPECT_TRUE(r.in.empty());
      EXPECT_EQ(r.in_len, 0u);
      EXPECT_FALSE(r.stage_in);
      if (fi.small) {
        ASSERT_EQ(r.staged.size(), fi.bytes);
        ASSERT_EQ(r.payload.size(), 1u);
        EXPECT_EQ(r.payload[0].iov_base, static_cast<void *>(r.staged.data()));
        EXPECT_EQ(r.payload[0].iov_len, fi.bytes);
        // The staged bytes are the source bytes, in order.
        std::vector<uint8_t> want;
        for (const iovec &v : expect_local) {
          auto *b = static_cast<const uint8_t *>(v.iov_base);
          want.insert(want.end(), b, b + v.iov_len);
        }
        EXPECT_EQ(0, std::memcmp(r.staged.data(), want.data(), want.size()))
            << "staged bytes differ from the source";
      } else {
        EXPECT_TRUE(r.staged.empty());
        ASSERT_EQ(r.payload.size(), expect_local.size());
        for (size_t j = 0; j < expect_local.size(); ++j) {
          EXPECT_EQ(r.payload[j].iov_base, expect_local[j].iov_base) << "segment " << j;
          EXPECT_EQ(r.payload[j].iov_len, expect_local[j].iov_len) << "segment " << j;
        }
      }
    } else {
      EXPECT_TRUE(r.payload.empty());
      EXPECT_EQ(r.in_len, fi.bytes);
      EXPECT_EQ(r.stage_in, fi.small);
      if (fi.small) {
        EXPECT_EQ(r.staged.size(), fi.bytes);
      } else {
        EXPECT_TRUE(r.staged.empty());
      }
      ASSERT_EQ(r.in.size(), expect_local.size());
      for (size_t j = 0; j < expect_local.size(); ++j) {
        EXPECT_EQ(r.in[j].iov_base, expect_local[j].iov_base) << "segment " << j;
        EXPECT_EQ(r.in[j].iov_len, expect_local[j].iov_len) << "segment " << j;
      }
      EXPECT_EQ(IovBytes(r.in), fi.bytes);
    }
    infos->push_back(std::move(fi));
  }
  EXPECT_EQ(pi, pieces.size()) << "not every piece was planned";
  EXPECT_EQ(off, 0u);
}

// CheckPlanInto, stopping the test on a fatal failure inside it.
#define CHECK_PLAN(infos, is_write, pieces, first, frames, done) \
  ASSERT_NO_FATAL_FAILURE(CheckPlanInto(is_write, pieces, first, frames, done, &(infos)))

// Pieces over `buf`, `count` of `len` bytes each, `gap` bytes apart locally
// and at fake remote addresses.
std::vector<Piece> Spaced(std::vector<uint8_t> *buf, size_t count, size_t len, size_t gap) {
  *buf = Pattern(count * (len + gap), 7);
  std::vector<Piece> pieces;
  for (size_t i = 0; i < count; ++i) {
    pieces.push_back({reinterpret_cast<uintptr_t>(buf->data() + i * (len + gap)), 0x7000000000ull + i * (len + 2 * gap),
                      len});
  }
  return pieces;
}

// ------------------------------------------------------------- basics

TEST(FramePlannerTest, OneByteBatch) {
  for (bool is_write : {true, false}) {
    SCOPED_TRACE(is_write ? "write" : "read");
    uint8_t byte = 0x5a;
    std::vector<Piece> pieces = {{reinterpret_cast<uintptr_t>(&byte), 0x1234, 1}};
    Caches caches(3);
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), 1, caches.ptrs, done);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0].size(), 0u);
    ASSERT_EQ(frames[1].size(), 1u);  // dealt from `first`
    EXPECT_EQ(frames[2].size(), 0u);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, 1, frames, done);
    ASSERT_EQ(infos.size(), 1u);
    ASSERT_EQ(infos[0].segs.size(), 1u);
    EXPECT_EQ(infos[0].segs[0].addr, 0x1234u);
    EXPECT_EQ(infos[0].segs[0].len, 1u);
    EXPECT_FALSE(infos[0].small);  // one segment is never staged
    Request &r = *frames[1][0];
    if (is_write) {
      ASSERT_EQ(r.payload.size(), 1u);
      EXPECT_EQ(r.payload[0].iov_base, &byte);
    } else {
      ASSERT_EQ(r.in.size(), 1u);
      EXPECT_EQ(r.in[0].iov_base, &byte);
      EXPECT_FALSE(r.stage_in);
    }
  }
}

TEST(FramePlannerTest, EmptyBatchHasNoFrames) {
  Caches caches(2);
  auto done = std::make_shared<Completion>();
  Frames frames = PlanFrames(true, nullptr, 0, 0, caches.ptrs, done);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_TRUE(frames[0].empty());
  EXPECT_TRUE(frames[1].empty());
}

TEST(FramePlannerTest, PieceOfThreeMaxFramesPlusFiveIsCut) {
  const size_t len = 3 * kMaxFrameBytes + 5;
  std::vector<uint8_t> buf = Pattern(len, 1);
  std::vector<Piece> pieces = {{reinterpret_cast<uintptr_t>(buf.data()), 0x100000000ull, len}};
  for (bool is_write : {true, false}) {
    for (size_t ns : {1u, 2u, 4u}) {
      SCOPED_TRACE(testing::Message() << (is_write ? "write" : "read") << ", streams " << ns);
      Caches caches(ns);
      auto done = std::make_shared<Completion>();
      Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), 0, caches.ptrs, done);
      std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, 0, frames, done);
      if (ns == 1 || ns == 2) {
        // total / ns is above the maximum: full frames, then the rest.
        ASSERT_EQ(infos.size(), 4u);
        for (size_t k = 0; k < 3; ++k) {
          ASSERT_EQ(infos[k].segs.size(), 1u);
          EXPECT_EQ(infos[k].segs[0].addr, 0x100000000ull + k * kMaxFrameBytes);
          EXPECT_EQ(infos[k].segs[0].len, kMaxFrameBytes);
        }
        ASSERT_EQ(infos[3].segs.size(), 1u);
        EXPECT_EQ(infos[3].segs[0].addr, 0x100000000ull + 3 * kMaxFrameBytes);
        EXPECT_EQ(infos[3].segs[0].len, 5u);
      } else {
        // About one frame per stream.
        EXPECT_GE(infos.size(), ns);
        for (const auto &s : frames) EXPECT_FALSE(s.empty());
      }
    }
  }
}

// ------------------------------------------------------------- limits

TEST(FramePlannerTest, SegmentLimitCutsFramesOfManySmallPieces) {
  // 20000 pieces of 16 bytes: far below the byte limit, so the segment limit
  // cuts the frames: 8192 + 8192 + 3616.
  std::vector<uint8_t> buf;
  std::vector<Piece> pieces = Spaced(&buf, 20000, 16, 16);
  for (bool is_write : {true, false}) {
    SCOPED_TRACE(is_write ? "write" : "read");
    Caches caches(2);
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), 1, caches.ptrs, done);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, 1, frames, done);
    ASSERT_EQ(infos.size(), 3u);
    EXPECT_EQ(infos[0].segs.size(), kMaxFrameSegments);
    EXPECT_EQ(infos[1].segs.size(), kMaxFrameSegments);
    EXPECT_EQ(infos[2].segs.size(), 20000 - 2 * kMaxFrameSegments);
    for (const auto &fi : infos) EXPECT_TRUE(fi.small);
    // Dealt from stream 1: 1, 0, 1.
    EXPECT_EQ(frames[0].size(), 1u);
    EXPECT_EQ(frames[1].size(), 2u);
  }
}

TEST(FramePlannerTest, AFramesBuffersAreSizedToWhatItHolds) {
  // 10,000 pieces of 4 KiB over 3 streams: frames of 1,024 segments (4 MiB).
  // Their segment lists and iovecs get room for about that, not for
  // kMaxFrameSegments (128 KiB each, allocated and zeroed per frame).
  std::vector<uint8_t> buf;
  std::vector<Piece> pieces = Spaced(&buf, 10000, 4096, 0);
  for (bool is_write : {true, false}) {
    SCOPED_TRACE(is_write ? "write" : "read");
    Caches caches(3);
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), 0, caches.ptrs, done);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, 0, frames, done);
    ASSERT_EQ(infos.size(), 10u);
    for (const auto &stream : frames) {
      for (const auto &r : stream) {
        EXPECT_LE(r->body.capacity(), 2 * r->body.size()) << "segments in the frame: " << (r->body.size() - 4) / 16;
        const std::vector<iovec> &iov = is_write ? r->payload : r->in;
        if (iov.size() > 1) {
          EXPECT_LE(iov.capacity(), 2 * iov.size());
        }
      }
    }
  }
}

TEST(FramePlannerTest, ByteLimitCutsPiecesAcrossFrames) {
  // 40 pieces of 1 MiB + 3 bytes over 2 streams: frames of kMaxFrameBytes
  // that cut pieces in the middle.
  const size_t len = (1u << 20) + 3;
  std::vector<uint8_t> buf;
  std::vector<Piece> pieces = Spaced(&buf, 40, len, 5);
  for (bool is_write : {true, false}) {
    SCOPED_TRACE(is_write ? "write" : "read");
    Caches caches(2);
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), 0, caches.ptrs, done);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, 0, frames, done);
    uint64_t total = 0;
    for (size_t k = 0; k < infos.size(); ++k) {
      total += infos[k].bytes;
      if (k + 1 < infos.size()) {
        EXPECT_EQ(infos[k].bytes, kMaxFrameBytes) << "frame " << k;
      }
      EXPECT_FALSE(infos[k].small);
    }
    EXPECT_EQ(total, 40 * len);
    EXPECT_EQ(infos.size(), (40 * len + kMaxFrameBytes - 1) / kMaxFrameBytes);
  }
}

TEST(FramePlannerTest, SmallBatchesSpreadOverStreamsWithinMinFrame) {
  // A batch a little over kMinFrameBytes * 2 on 4 streams: frames are at
  // least kMinFrameBytes, so only 3 frames.
  const size_t len = 2 * kMinFrameBytes + 100;
  std::vector<uint8_t> buf = Pattern(len, 3);
  std::vector<Piece> pieces = {{reinterpret_cast<uintptr_t>(buf.data()), 0x5000000, len}};
  Caches caches(4);
  auto done = std::make_shared<Completion>();
  Frames frames = PlanFrames(true, pieces.data(), pieces.size(), 2, caches.ptrs, done);
  std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, true, pieces, 2, frames, done);
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].bytes, kMinFrameBytes);
  EXPECT_EQ(infos[1].bytes, kMinFrameBytes);
  EXPECT_EQ(infos[2].bytes, 100u);
  EXPECT_EQ(frames[2].size(), 1u);
  EXPECT_EQ(frames[3].size(), 1u);
  EXPECT_EQ(frames[0].size(), 1u);
  EXPECT_EQ(frames[1].size(), 0u);
}

// ------------------------------------------------------------- round-robin

TEST(FramePlannerTest, FramesAreDealtRoundRobinFromFirst) {
  // 11 full frames over 3 streams from stream 2 (and from a `first` beyond
  // the stream count, which wraps).
  const size_t len = 11 * kMaxFrameBytes;
  std::vector<uint8_t> buf(len);
  std::vector<Piece> pieces = {{reinterpret_cast<uintptr_t>(buf.data()), 0x100000000ull, len}};
  for (size_t first : {0u, 2u, 7u}) {
    SCOPED_TRACE(testing::Message() << "first " << first);
    Caches caches(3);
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(false, pieces.data(), pieces.size(), first, caches.ptrs, done);
    ASSERT_EQ(frames.size(), 3u);
    size_t total = 0;
    for (size_t s = 0; s < 3; ++s) {
      // Stream s gets frames k with (first + k) % 3 == s, k in [0, 11).
      size_t want = 0;
      for (size_t k = 0; k < 11; ++k) want += (first + k) % 3 == s ? 1 : 0;
      EXPECT_EQ(frames[s].size(), want) << "stream " << s;
      total += frames[s].size();
    }
    EXPECT_EQ(total, 11u);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, false, pieces, first, frames, done);
    ASSERT_EQ(infos.size(), 11u);
    // Plan order is address order: check the stream a known frame lands on.
    for (size_t k = 0; k < 11; ++k) {
      const auto &stream = frames[(first + k) % 3];
      std::vector<wire::Segment> segs;
      uint64_t bytes = 0;
      ASSERT_TRUE(wire::DecodeSegments(stream[k / 3]->body.data(), stream[k / 3]->body.size(), &segs, &bytes));
      EXPECT_EQ(segs[0].addr, 0x100000000ull + k * kMaxFrameBytes);
    }
  }
}

TEST(FramePlannerTest, StagingBuffersComeFromTheirStreamsCache) {
  // Seed each cache with one recognisable buffer: a stream's first staged
  // frame must reuse its own cache's buffer.
  std::vector<uint8_t> buf;
  std::vector<Piece> pieces = Spaced(&buf, 3 * kMaxFrameSegments, 8, 8);  // 3 small frames
  for (bool is_write : {true, false}) {
    SCOPED_TRACE(is_write ? "write" : "read");
    Caches caches(3);
    std::vector<const uint8_t *> seeded;
    for (auto *c : caches.ptrs) {
      ByteBuffer b;
      b.Resize(1u << 20);
      seeded.push_back(b.data());
      c->Give(std::move(b));
    }
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), 1, caches.ptrs, done);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, 1, frames, done);
    ASSERT_EQ(infos.size(), 3u);
    for (size_t s = 0; s < 3; ++s) {
      ASSERT_EQ(frames[s].size(), 1u);
      ASSERT_TRUE(frames[s][0]->stage_in || is_write);
      EXPECT_EQ(frames[s][0]->staged.data(), seeded[s]) << "stream " << s << " staged from another cache";
    }
  }
}

// ------------------------------------------------------------- staging

TEST(FramePlannerTest, WriteOfSmallSegmentsIsStagedWithTheSourceBytes) {
  std::vector<uint8_t> buf;
  std::vector<Piece> pieces = Spaced(&buf, 100, 100, 3);
  Caches caches(1);
  auto done = std::make_shared<Completion>();
  Frames frames = PlanFrames(true, pieces.data(), pieces.size(), 0, caches.ptrs, done);
  std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, true, pieces, 0, frames, done);
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_TRUE(infos[0].small);
  Request &r = *frames[0][0];
  ASSERT_EQ(r.staged.size(), 100u * 100u);
  // Spot check by hand: piece 42's bytes sit at 42 * 100 in the staging buffer.
  EXPECT_EQ(0, std::memcmp(r.staged.data() + 42 * 100, buf.data() + 42 * 103, 100));
  // The copy was taken at planning time: changing the source now does not
  // change it.
  const uint8_t before = r.staged.data()[0];
  buf[0] = static_cast<uint8_t>(~buf[0]);
  EXPECT_EQ(r.staged.data()[0], before);
}

TEST(FramePlannerTest, ReadOfSmallSegmentsGetsAStagingBuffer) {
  std::vector<uint8_t> buf;
  std::vector<Piece> pieces = Spaced(&buf, 64, 1024, 1);  // exactly the coalescing average
  Caches caches(2);
  auto done = std::make_shared<Completion>();
  Frames frames = PlanFrames(false, pieces.data(), pieces.size(), 0, caches.ptrs, done);
  std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, false, pieces, 0, frames, done);
  ASSERT_EQ(infos.size(), 1u);
  ASSERT_TRUE(infos[0].small);
  Request &r = *frames[0][0];
  EXPECT_TRUE(r.stage_in);
  EXPECT_EQ(r.in_len, 64u * 1024u);
  EXPECT_EQ(r.staged.size(), 64u * 1024u);
  EXPECT_EQ(r.in.size(), 64u);
}

TEST(FramePlannerTest, LargeSegmentsCarryTheUsersIovecs) {
  std::vector<uint8_t> buf;
  std::vector<Piece> pieces = Spaced(&buf, 64, 1025, 1);  // just above the coalescing average
  for (bool is_write : {true, false}) {
    SCOPED_TRACE(is_write ? "write" : "read");
    Caches caches(2);
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), 0, caches.ptrs, done);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, 0, frames, done);
    ASSERT_EQ(infos.size(), 1u);
    EXPECT_FALSE(infos[0].small);
    Request &r = *frames[0][0];
    EXPECT_TRUE(r.staged.empty());
    const auto &iov = is_write ? r.payload : r.in;
    ASSERT_EQ(iov.size(), 64u);
    for (size_t i = 0; i < 64; ++i) {
      EXPECT_EQ(iov[i].iov_base, reinterpret_cast<void *>(pieces[i].local));
      EXPECT_EQ(iov[i].iov_len, 1025u);
    }
  }
}

// ------------------------------------------------------------- mixed

TEST(FramePlannerTest, RandomMixedBatchesKeepEveryByteOnceInOrder) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE(testing::Message() << "round " << round);
    // Piece sizes from 1 byte to 3 MiB, mostly small.
    std::vector<size_t> lens;
    size_t total = 0;
    const size_t count = 1 + rng() % 1500;
    for (size_t i = 0; i < count; ++i) {
      size_t len;
      const uint32_t kind = rng() % 64;
      if (kind == 0) {
        len = 1 + rng() % (3u << 20);
      } else if (kind < 8) {
        len = 1 + rng() % 65536;
      } else {
        len = 1 + rng() % 2048;
      }
      lens.push_back(len);
      total += len;
    }
    std::vector<uint8_t> buf = Pattern(total + count, static_cast<uint32_t>(round));
    std::vector<Piece> pieces;
    size_t at = 0;
    uint64_t remote = 0x200000000ull;
    for (size_t i = 0; i < count; ++i) {
      pieces.push_back({reinterpret_cast<uintptr_t>(buf.data() + at), remote, lens[i]});
      at += lens[i] + 1;
      remote += lens[i] + (rng() % 2) * 64;  // sometimes contiguous remotely
    }
    const bool is_write = round % 2 == 0;
    const size_t ns = 1 + rng() % 5;
    const size_t first = rng() % 8;
    Caches caches(ns);
    auto done = std::make_shared<Completion>();
    Frames frames = PlanFrames(is_write, pieces.data(), pieces.size(), first, caches.ptrs, done);
    ASSERT_EQ(frames.size(), ns);
    std::vector<FrameInfo> infos;
    CHECK_PLAN(infos, is_write, pieces, first, frames, done);
    uint64_t sum = 0;
    for (const auto &fi : infos) sum += fi.bytes;
    EXPECT_EQ(sum, total);
  }
}

}  // namespace
}  // namespace hixl::tcp
