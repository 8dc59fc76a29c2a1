// Unit tests for the TCP scatter/gather helpers (src/transport/tcp/iov.h):
// IovCursor, RxBuffer, ReadPart, SkipPart and SendCursors, over AF_UNIX
// socketpairs.
#include "transport/tcp/iov.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace hixl::tcp {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto &b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// ---------------------------------------------------------------- IovCursor

TEST(IovCursorTest, GatherAndAdvanceAcrossBoundariesAndEmptyEntries) {
  uint8_t a[3], b[5], c[2];
  std::vector<iovec> v = {{a, 0}, {a, 3}, {b, 0}, {b, 5}, {c, 0}, {c, 0}, {c, 2}, {c, 0}};
  IovCursor cur(&v);
  EXPECT_EQ(cur.left(), 10u);
  EXPECT_FALSE(cur.done());
  EXPECT_FALSE(cur.started());

  iovec out[8];
  ASSERT_EQ(cur.Gather(out, 8), 3u);  // empty entries are skipped
  EXPECT_EQ(out[0].iov_base, a);
  EXPECT_EQ(out[0].iov_len, 3u);
  EXPECT_EQ(out[1].iov_base, b);
  EXPECT_EQ(out[1].iov_len, 5u);
  EXPECT_EQ(out[2].iov_base, c);
  EXPECT_EQ(out[2].iov_len, 2u);
  ASSERT_EQ(cur.Gather(out, 2), 2u);  // capped by max_iov
  EXPECT_EQ(cur.Gather(out, 0), 0u);

  cur.Advance(2);  // inside a
  EXPECT_TRUE(cur.started());
  EXPECT_EQ(cur.left(), 8u);
  ASSERT_EQ(cur.Gather(out, 8), 3u);
  EXPECT_EQ(out[0].iov_base, a + 2);
  EXPECT_EQ(out[0].iov_len, 1u);

  cur.Advance(1);  // exactly to a's end: next is b (past an empty entry)
  EXPECT_EQ(cur.left(), 7u);
  ASSERT_EQ(cur.Gather(out, 8), 2u);
  EXPECT_EQ(out[0].iov_base, b);
  EXPECT_EQ(out[0].iov_len, 5u);

  cur.Advance(6);  // all of b and one byte of c, across two empty entries
  EXPECT_EQ(cur.left(), 1u);
  ASSERT_EQ(cur.Gather(out, 8), 1u);
  EXPECT_EQ(out[0].iov_base, c + 1);
  EXPECT_EQ(out[0].iov_len, 1u);

  cur.Advance(1);
  EXPECT_TRUE(cur.done());
  EXPECT_EQ(cur.left(), 0u);
  EXPECT_EQ(cur.Gather(out, 8), 0u);
}

TEST(IovCursorTest, AdvanceAcrossSeveralEntriesAtOnce) {
  uint8_t buf[100];
  std::vector<iovec> v = {{buf, 10}, {buf + 10, 10}, {buf + 20, 0}, {buf + 20, 10}, {buf + 30, 70}};
  IovCursor cur(&v);
  cur.Advance(25);
  iovec out[4];
  ASSERT_EQ(cur.Gather(out, 4), 2u);
  EXPECT_EQ(out[0].iov_base, buf + 25);
  EXPECT_EQ(out[0].iov_len, 5u);
  EXPECT_EQ(out[1].iov_base, buf + 30);
  EXPECT_EQ(out[1].iov_len, 70u);
  cur.Advance(0);  // no-op
  EXPECT_EQ(cur.left(), 75u);
  cur.Advance(75);
  EXPECT_TRUE(cur.done());
}

TEST(IovCursorTest, EmptyAndNullLists) {
  IovCursor none;
  EXPECT_TRUE(none.done());
  iovec out[2];
  EXPECT_EQ(none.Gather(out, 2), 0u);

  uint8_t x;
  std::vector<iovec> zeros = {{&x, 0}, {&x, 0}};
  IovCursor z(&zeros);
  EXPECT_TRUE(z.done());
  EXPECT_FALSE(z.started());
  EXPECT_EQ(z.Gather(out, 2), 0u);

  std::vector<iovec> empty;
  IovCursor e(&empty);
  EXPECT_TRUE(e.done());
  e.Reset(nullptr);
  EXPECT_TRUE(e.done());
  EXPECT_EQ(e.Gather(out, 2), 0u);
}

TEST(IovCursorTest, ResetStartsOver) {
  uint8_t buf[8];
  std::vector<iovec> v = {{buf, 8}};
  IovCursor cur(&v);
  cur.Advance(8);
  EXPECT_TRUE(cur.done());
  cur.Reset(&v);
  EXPECT_EQ(cur.left(), 8u);
  EXPECT_FALSE(cur.started());
  iovec out[1];
  ASSERT_EQ(cur.Gather(out, 1), 1u);
  EXPECT_EQ(out[0].iov_base, buf);
}

TEST(IovBytesTest, SumsAndSaturates) {
  uint8_t x;
  EXPECT_EQ(IovBytes({}), 0u);
  EXPECT_EQ(IovBytes({{&x, 3}, {&x, 0}, {&x, 4}}), 7u);
  EXPECT_EQ(IovBytes({{&x, SIZE_MAX}, {&x, 1}}), SIZE_MAX);
  EXPECT_EQ(IovBytes({{&x, SIZE_MAX / 2 + 1}, {&x, SIZE_MAX / 2 + 1}, {&x, 5}}), SIZE_MAX);
}

// ---------------------------------------------------------------- socket fixture

class SocketPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0) << strerror(errno);
    // The reading end is non-blocking, as the engine's are; the writing end
    // blocks, so helper writes are simple.
    int fl = fcntl(fds_[0], F_GETFL);
    ASSERT_EQ(fcntl(fds_[0], F_SETFL, fl | O_NONBLOCK), 0);
  }
  void TearDown() override {
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
  }
  int rfd() const { return fds_[0]; }
  int wfd() const { return fds_[1]; }
  void CloseWriter() {
    close(fds_[1]);
    fds_[1] = -1;
  }

  static void WriteAll(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
      ssize_t w = write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      ASSERT_GT(w, 0) << strerror(errno);
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  void Write(const std::vector<uint8_t> &v) { WriteAll(wfd(), v.data(), v.size()); }

  // ReadPart until it returns something other than kWouldBlock (bounded).
  IoResult ReadUntilDone(RxBuffer *rx, IovCursor *dst, size_t *left) {
    auto until = Clock::now() + std::chrono::seconds(20);
    for (;;) {
      IoResult r = ReadPart(rfd(), rx, dst, left);
      if (r != IoResult::kWouldBlock || Clock::now() > until) return r;
      pollfd p{rfd(), POLLIN, 0};
      poll(&p, 1, 100);
    }
  }
  IoResult SkipUntilDone(RxBuffer *rx, size_t *left) {
    auto until = Clock::now() + std::chrono::seconds(20);
    for (;;) {
      IoResult r = SkipPart(rfd(), rx, left);
      if (r != IoResult::kWouldBlock || Clock::now() > until) return r;
      pollfd p{rfd(), POLLIN, 0};
      poll(&p, 1, 100);
    }
  }

  int fds_[2] = {-1, -1};
};

// ---------------------------------------------------------------- RxBuffer

TEST_F(SocketPairTest, RxBufferFillConsumeEof) {
  RxBuffer rx;
  EXPECT_EQ(rx.size(), 0u);
  EXPECT_EQ(rx.Fill(rfd()), IoResult::kWouldBlock);
  EXPECT_EQ(rx.size(), 0u);

  std::vector<uint8_t> data = Pattern(10, 1);
  Write(data);
  ASSERT_EQ(rx.Fill(rfd()), IoResult::kProgress);
  ASSERT_EQ(rx.size(), 10u);
  EXPECT_EQ(std::memcmp(rx.data(), data.data(), 10), 0);
  rx.Consume(4);
  ASSERT_EQ(rx.size(), 6u);
  EXPECT_EQ(std::memcmp(rx.data(), data.data() + 4, 6), 0);
  EXPECT_EQ(rx.Fill(rfd()), IoResult::kWouldBlock);
  EXPECT_EQ(rx.size(), 6u);

  std::vector<uint8_t> more = Pattern(5, 2);
  Write(more);
  ASSERT_EQ(rx.Fill(rfd()), IoResult::kProgress);
  ASSERT_EQ(rx.size(), 11u);
  EXPECT_EQ(std::memcmp(rx.data(), data.data() + 4, 6), 0);
  EXPECT_EQ(std::memcmp(rx.data() + 6, more.data(), 5), 0);
  rx.Consume(11);
  EXPECT_EQ(rx.size(), 0u);

  CloseWriter();
  EXPECT_EQ(rx.Fill(rfd()), IoResult::kEof);
}

TEST(RxBufferTest, FillOnBadFdIsError) {
  RxBuffer rx;
  errno = 0;
  EXPECT_EQ(rx.Fill(-1), IoResult::kError);
  EXPECT_EQ(errno, EBADF);
}

TEST_F(SocketPairTest, RxBufferCompactsAndKeepsOrder) {
  // Fill and consume past half of the 16 KiB buffer repeatedly: the bytes
  // must stay in order across the compaction.
  std::vector<uint8_t> data = Pattern(64 * 1024, 3);
  RxBuffer rx;
  std::vector<uint8_t> got;
  size_t written = 0;
  for (int step = 0; step < 1000 && got.size() < data.size(); ++step) {
    if (written < data.size()) {
      size_t n = std::min<size_t>(3000, data.size() - written);
      WriteAll(wfd(), data.data() + written, n);
      written += n;
    }
    IoResult r = rx.Fill(rfd());
    ASSERT_TRUE(r == IoResult::kProgress || r == IoResult::kWouldBlock);
    size_t take = std::min<size_t>(rx.size(), 2500);
    got.insert(got.end(), rx.data(), rx.data() + take);
    rx.Consume(take);
  }
  EXPECT_EQ(got, data);
}

// ---------------------------------------------------------------- ReadPart

TEST_F(SocketPairTest, ReadPartWouldBlockWithoutData) {
  RxBuffer rx;
  std::vector<uint8_t> small(100), large(64 * 1024);
  for (auto *buf : {&small, &large}) {
    std::vector<iovec> iov = {{buf->data(), buf->size()}};
    IovCursor dst(&iov);
    size_t left = buf->size();
    EXPECT_EQ(ReadPart(rfd(), &rx, &dst, &left), IoResult::kWouldBlock);
    EXPECT_EQ(left, buf->size());
    EXPECT_EQ(dst.left(), buf->size());
  }
}

TEST_F(SocketPairTest, ReadPartSmallInPieces) {
  std::vector<uint8_t> data = Pattern(100, 4);
  std::vector<uint8_t> buf(100, 0);
  std::vector<iovec> iov = {{buf.data(), 30}, {buf.data() + 30, 0}, {buf.data() + 30, 70}};
  IovCursor dst(&iov);
  RxBuffer rx;
  size_t left = 100;

  WriteAll(wfd(), data.data(), 40);
  EXPECT_EQ(ReadPart(rfd(), &rx, &dst, &left), IoResult::kWouldBlock);
  EXPECT_EQ(left, 60u);
  EXPECT_EQ(dst.left(), 60u);
  EXPECT_EQ(std::memcmp(buf.data(), data.data(), 40), 0);

  WriteAll(wfd(), data.data() + 40, 1);
  EXPECT_EQ(ReadPart(rfd(), &rx, &dst, &left), IoResult::kWouldBlock);
  EXPECT_EQ(left, 59u);

  WriteAll(wfd(), data.data() + 41, 59);
  EXPECT_EQ(ReadPart(rfd(), &rx, &dst, &left), IoResult::kProgress);
  EXPECT_EQ(left, 0u);
  EXPECT_TRUE(dst.done());
  EXPECT_EQ(buf, data);
  EXPECT_EQ(rx.size(), 0u);
}

TEST_F(SocketPairTest, ReadPartSmallKeepsFollowingBytesBuffered) {
  // One write holds a 100-byte part and the next 20 bytes: the small part is
  // read through rx, so the next 20 bytes wait there, not in the socket.
  std::vector<uint8_t> data = Pattern(120, 5);
  Write(data);
  RxBuffer rx;
  std::vector<uint8_t> a(100), b(20);
  std::vector<iovec> ia = {{a.data(), a.size()}};
  IovCursor da(&ia);
  size_t left = 100;
  ASSERT_EQ(ReadUntilDone(&rx, &da, &left), IoResult::kProgress);
  EXPECT_EQ(left, 0u);
  EXPECT_EQ(rx.size(), 20u);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin()));

  std::vector<iovec> ib = {{b.data(), b.size()}};
  IovCursor db(&ib);
  left = 20;
  ASSERT_EQ(ReadPart(rfd(), &rx, &db, &left), IoResult::kProgress);
  EXPECT_EQ(left, 0u);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + 100));
  EXPECT_EQ(rx.size(), 0u);
}

TEST_F(SocketPairTest, ReadPartLargeFromAWriterThread) {
  constexpr size_t kLarge = 1 << 20;
  std::vector<uint8_t> data = Pattern(kLarge + 10, 6);  // the part, then 10 bytes of the next
  std::thread writer([&] {
    size_t off = 0;
    for (int i = 0; off < data.size() && i < 100000; ++i) {
      size_t n = std::min<size_t>(7919, data.size() - off);
      WriteAll(wfd(), data.data() + off, n);
      off += n;
    }
  });
  // The destination: several iovecs of odd sizes, one of them empty.
  std::vector<uint8_t> buf(kLarge, 0);
  std::vector<iovec> iov = {{buf.data(), 1000},
                            {buf.data() + 1000, 0},
                            {buf.data() + 1000, 300000},
                            {buf.data() + 301000, kLarge - 301000}};
  IovCursor dst(&iov);
  RxBuffer rx;
  size_t left = kLarge;
  IoResult r = ReadUntilDone(&rx, &dst, &left);
  writer.join();
  ASSERT_EQ(r, IoResult::kProgress);
  EXPECT_EQ(left, 0u);
  EXPECT_TRUE(dst.done());
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));

  // Not one byte of the next part was swallowed.
  std::vector<uint8_t> next(10);
  std::vector<iovec> in = {{next.data(), next.size()}};
  IovCursor dn(&in);
  left = 10;
  ASSERT_EQ(ReadUntilDone(&rx, &dn, &left), IoResult::kProgress);
  EXPECT_TRUE(std::equal(next.begin(), next.end(), data.begin() + kLarge));
}

TEST_F(SocketPairTest, ReadPartLargeReadsTheNextHeaderInTheSameCall) {
  // A large part followed by more than kReadAhead bytes, all in the socket:
  // the direct read also takes the start of what follows into rx, at most
  // kReadAhead bytes of it, and not a byte more is lost.
  constexpr size_t kLarge = 64 * 1024, kNext = 3 * RxBuffer::kReadAhead;
  std::vector<uint8_t> data = Pattern(kLarge + kNext, 8);
  Write(data);
  RxBuffer rx;
  std::vector<uint8_t> a(kLarge), b(kNext);
  std::vector<iovec> ia = {{a.data(), a.size()}};
  IovCursor da(&ia);
  size_t left = kLarge;
  ASSERT_EQ(ReadPart(rfd(), &rx, &da, &left), IoResult::kProgress);
  EXPECT_EQ(left, 0u);
  EXPECT_EQ(rx.size(), RxBuffer::kReadAhead);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin()));
  std::vector<iovec> ib = {{b.data(), b.size()}};
  IovCursor db(&ib);
  left = kNext;
  ASSERT_EQ(ReadUntilDone(&rx, &db, &left), IoResult::kProgress);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + kLarge));
  EXPECT_EQ(rx.size(), 0u);
}

TEST_F(SocketPairTest, ReadPartIntoMoreIovecsThanOneSyscallTakes) {
  // 3000 destinations of 100 bytes: recvmsg takes at most kMaxIov iovecs,
  // one of which is rx's; the part still arrives whole and in order.
  constexpr size_t kPieces = 3000, kPiece = 100;
  std::vector<uint8_t> data = Pattern(kPieces * kPiece + 16, 9);
  std::thread writer([&] { WriteAll(wfd(), data.data(), data.size()); });
  std::vector<uint8_t> buf(kPieces * kPiece);
  std::vector<iovec> iov;
  for (size_t i = 0; i < kPieces; ++i) iov.push_back({buf.data() + i * kPiece, kPiece});
  IovCursor dst(&iov);
  RxBuffer rx;
  size_t left = buf.size();
  IoResult r = ReadUntilDone(&rx, &dst, &left);
  writer.join();
  ASSERT_EQ(r, IoResult::kProgress);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));
  std::vector<uint8_t> tail(16);
  std::vector<iovec> it = {{tail.data(), tail.size()}};
  IovCursor dt(&it);
  left = tail.size();
  ASSERT_EQ(ReadUntilDone(&rx, &dt, &left), IoResult::kProgress);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), data.begin() + kPieces * kPiece));
}

TEST_F(SocketPairTest, ReadPartLargeStartingInRxBuffer) {
  // A small part and a large one arrive together: the small read pulls the
  // start of the large part into rx; the large read must take it from there
  // first, then read the rest directly.
  constexpr size_t kSmall = 64, kLarge = 300 * 1024;
  std::vector<uint8_t> data = Pattern(kSmall + kLarge, 7);
  std::thread writer([&] { WriteAll(wfd(), data.data(), data.size()); });
  RxBuffer rx;
  std::vector<uint8_t> a(kSmall), b(kLarge);
  std::vector<iovec> ia = {{a.data(), a.size()}};
  IovCursor da(&ia);
  size_t left = kSmall;
  ASSERT_EQ(ReadUntilDone(&rx, &da, &left), IoResult::kProgress);
  EXPECT_GT(rx.size(), 0u);  // some of the large part came along
  std::vector<iovec> ib = {{b.data(), 5}, {b.data() + 5, kLarge - 5}};
  IovCursor db(&ib);
  left = kLarge;
  IoResult r = ReadUntilDone(&rx, &db, &left);
  writer.join();
  ASSERT_EQ(r, IoResult::kProgress);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + kSmall));
}

TEST_F(SocketPairTest, ReadPartEofMidPart) {
  std::vector<uint8_t> data = Pattern(5, 8);
  Write(data);
  CloseWriter();
  std::vector<uint8_t> buf(10, 0);
  std::vector<iovec> iov = {{buf.data(), buf.size()}};
  IovCursor dst(&iov);
  RxBuffer rx;
  size_t left = 10;
  EXPECT_EQ(ReadUntilDone(&rx, &dst, &left), IoResult::kEof);
  EXPECT_EQ(left, 5u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.begin()));
}

TEST_F(SocketPairTest, ReadPartLargeEof) {
  std::vector<uint8_t> data = Pattern(5000, 9);
  Write(data);
  CloseWriter();
  std::vector<uint8_t> buf(100000, 0);
  std::vector<iovec> iov = {{buf.data(), buf.size()}};
  IovCursor dst(&iov);
  RxBuffer rx;
  size_t left = buf.size();
  EXPECT_EQ(ReadUntilDone(&rx, &dst, &left), IoResult::kEof);
  EXPECT_EQ(left, buf.size() - 5000);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.begin()));
}

TEST_F(SocketPairTest, ReadPartBadFdIsError) {
  std::vector<uint8_t> buf(10000);
  for (size_t n : {size_t{10}, buf.size()}) {
    std::vector<iovec> iov = {{buf.data(), n}};
    IovCursor dst(&iov);
    RxBuffer rx;
    size_t left = n;
    EXPECT_EQ(ReadPart(-1, &rx, &dst, &left), IoResult::kError) << n;
    EXPECT_EQ(left, n);
  }
}

// ---------------------------------------------------------------- SkipPart

TEST_F(SocketPairTest, SkipPartSmallThenNextPartIntact) {
  std::vector<uint8_t> data = Pattern(5000 + 10, 10);
  Write(data);
  RxBuffer rx;
  size_t left = 5000;
  ASSERT_EQ(SkipUntilDone(&rx, &left), IoResult::kProgress);
  EXPECT_EQ(left, 0u);
  std::vector<uint8_t> next(10);
  std::vector<iovec> iov = {{next.data(), next.size()}};
  IovCursor dst(&iov);
  left = 10;
  ASSERT_EQ(ReadUntilDone(&rx, &dst, &left), IoResult::kProgress);
  EXPECT_TRUE(std::equal(next.begin(), next.end(), data.begin() + 5000));
}

TEST_F(SocketPairTest, SkipPartLargeFromAWriterThread) {
  constexpr size_t kLarge = 1 << 20;
  std::vector<uint8_t> data = Pattern(kLarge + 33, 11);
  std::thread writer([&] {
    size_t off = 0;
    for (int i = 0; off < data.size() && i < 100000; ++i) {
      size_t n = std::min<size_t>(65537, data.size() - off);
      WriteAll(wfd(), data.data() + off, n);
      off += n;
    }
  });
  RxBuffer rx;
  size_t left = kLarge;
  IoResult r = SkipUntilDone(&rx, &left);
  ASSERT_EQ(r, IoResult::kProgress);
  EXPECT_EQ(left, 0u);
  std::vector<uint8_t> next(33);
  std::vector<iovec> iov = {{next.data(), next.size()}};
  IovCursor dst(&iov);
  left = 33;
  r = ReadUntilDone(&rx, &dst, &left);
  writer.join();
  ASSERT_EQ(r, IoResult::kProgress);
  EXPECT_TRUE(std::equal(next.begin(), next.end(), data.begin() + kLarge));
}

TEST_F(SocketPairTest, SkipPartWouldBlockAndEof) {
  RxBuffer rx;
  size_t left = 100;
  EXPECT_EQ(SkipPart(rfd(), &rx, &left), IoResult::kWouldBlock);
  EXPECT_EQ(left, 100u);
  std::vector<uint8_t> data = Pattern(30, 12);
  Write(data);
  EXPECT_EQ(SkipPart(rfd(), &rx, &left), IoResult::kWouldBlock);
  EXPECT_EQ(left, 70u);
  CloseWriter();
  EXPECT_EQ(SkipUntilDone(&rx, &left), IoResult::kEof);
  EXPECT_EQ(left, 70u);
}

// ---------------------------------------------------------------- SendCursors

// Reads everything from `fd` (blocking) until EOF or `limit` bytes.
std::vector<uint8_t> Drain(int fd, size_t limit) {
  std::vector<uint8_t> got;
  std::vector<uint8_t> buf(64 * 1024);
  while (got.size() < limit) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + n);
  }
  return got;
}

TEST(SendCursorsTest, ManyCursorsArriveInOrder) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  // Cursors over slices of one pattern, in order: mixed sizes, empty entries,
  // an empty cursor, and one with more than kMaxIov pieces.
  const size_t total = 3 * 1024 * 1024 + 12345;
  std::vector<uint8_t> data = Pattern(total, 13);
  std::vector<std::vector<iovec>> lists;
  size_t off = 0;
  auto take = [&](size_t n) {
    iovec v{data.data() + off, n};
    off += n;
    return v;
  };
  lists.push_back({take(100), take(0), take(5000)});
  lists.push_back({});
  {
    std::vector<iovec> many;
    for (int i = 0; i < 2000; ++i) many.push_back(take(i % 7 == 0 ? 0 : 16));
    lists.push_back(many);
  }
  lists.push_back({take(1 << 20)});
  lists.push_back({take(0)});
  lists.push_back({take(777), take(1 << 20), take(3)});
  lists.push_back({take(total - off)});
  ASSERT_EQ(off, total);

  std::vector<IovCursor> cursors(lists.size());
  for (size_t i = 0; i < lists.size(); ++i) cursors[i].Reset(&lists[i]);

  std::vector<uint8_t> got;
  std::thread reader([&] { got = Drain(fds[0], total + 1); });
  auto until = Clock::now() + std::chrono::seconds(20);
  IoResult r = IoResult::kWouldBlock;
  int would_block = 0;
  while (Clock::now() < until) {
    r = SendCursors(fds[1], cursors.size(), [&](size_t i) { return &cursors[i]; });
    if (r != IoResult::kWouldBlock) break;
    ++would_block;
    pollfd p{fds[1], POLLOUT, 0};
    poll(&p, 1, 100);
  }
  EXPECT_EQ(r, IoResult::kProgress);
  for (size_t i = 0; i < cursors.size(); ++i) EXPECT_TRUE(cursors[i].done()) << i;
  shutdown(fds[1], SHUT_WR);
  reader.join();
  close(fds[0]);
  close(fds[1]);
  EXPECT_GT(would_block, 0);  // 3 MiB does not fit a socket buffer at once
  ASSERT_EQ(got.size(), total);
  EXPECT_TRUE(got == data);
}

TEST(SendCursorsTest, PartialSendAccountsEveryByte) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  int fl = fcntl(fds[0], F_GETFL);
  ASSERT_EQ(fcntl(fds[0], F_SETFL, fl | O_NONBLOCK), 0);
  const size_t total = 8 * 1024 * 1024;
  std::vector<uint8_t> data = Pattern(total, 14);
  std::vector<std::vector<iovec>> lists(4);
  for (size_t i = 0; i < 4; ++i) lists[i] = {{data.data() + i * (total / 4), total / 4}};
  std::vector<IovCursor> cursors(4);
  for (size_t i = 0; i < 4; ++i) cursors[i].Reset(&lists[i]);

  // Nobody reads yet: the socket fills and SendCursors says so.
  ASSERT_EQ(SendCursors(fds[1], 4, [&](size_t i) { return &cursors[i]; }), IoResult::kWouldBlock);
  size_t left = 0;
  for (const auto &c : cursors) left += c.left();
  size_t sent = total - left;
  EXPECT_GT(sent, 0u);
  EXPECT_LT(sent, total);
  // Cursors before the first unfinished one are done; those after untouched.
  bool seen_partial = false;
  for (const auto &c : cursors) {
    if (seen_partial) {
      EXPECT_FALSE(c.started());
    }
    if (!c.done()) seen_partial = true;
  }
  // Exactly the bytes reported sent are in the socket, in order.
  std::vector<uint8_t> got;
  std::vector<uint8_t> buf(64 * 1024);
  for (int i = 0; i < 100000; ++i) {
    ssize_t n = read(fds[0], buf.data(), buf.size());
    if (n <= 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + n);
  }
  ASSERT_EQ(got.size(), sent);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
  close(fds[0]);
  close(fds[1]);
}

TEST(SendCursorsTest, NothingToSend) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::vector<iovec> empty;
  uint8_t x;
  std::vector<iovec> zeros = {{&x, 0}};
  IovCursor cursors[3] = {IovCursor(&empty), IovCursor(&zeros), IovCursor()};
  EXPECT_EQ(SendCursors(fds[1], 3, [&](size_t i) { return &cursors[i]; }), IoResult::kProgress);
  EXPECT_EQ(SendCursors(fds[1], 0, [&](size_t i) { return &cursors[i]; }), IoResult::kProgress);
  int fl = fcntl(fds[0], F_GETFL);
  ASSERT_EQ(fcntl(fds[0], F_SETFL, fl | O_NONBLOCK), 0);
  uint8_t b;
  EXPECT_EQ(read(fds[0], &b, 1), -1);  // nothing was written
  EXPECT_EQ(errno, EAGAIN);
  close(fds[0]);
  close(fds[1]);
}

TEST(SendCursorsTest, ClosedPeerIsErrorWithoutSigpipe) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  close(fds[0]);
  std::vector<uint8_t> data = Pattern(1000, 15);
  std::vector<iovec> list = {{data.data(), data.size()}};
  IovCursor c(&list);
  errno = 0;
  EXPECT_EQ(SendCursors(fds[1], 1, [&](size_t) { return &c; }), IoResult::kError);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_EQ(c.left(), data.size());
  close(fds[1]);
}

TEST(BufferCacheTest, KeepsAtMostItsByteBudget) {
  // A burst of big staging buffers must not stay with an idle stream.
  BufferCache cache;
  const size_t big = BufferCache::kMaxKept;
  for (int i = 0; i < 8; ++i) {
    ByteBuffer b;
    b.Resize(big);
    cache.Give(std::move(b));
  }
  EXPECT_LE(cache.kept_bytes(), BufferCache::kMaxKeptBytes);
  EXPECT_GT(cache.kept_bytes(), 0u);
  ByteBuffer again = cache.Take(1024);  // reused, with its storage
  EXPECT_EQ(again.capacity(), big);
  EXPECT_EQ(cache.kept_bytes(), BufferCache::kMaxKeptBytes - big);
  ByteBuffer huge;
  huge.Resize(BufferCache::kMaxKept + 1);
  const size_t before = cache.kept_bytes();
  cache.Give(std::move(huge));  // too big to keep at all
  EXPECT_EQ(cache.kept_bytes(), before);
}

}  // namespace
}  // namespace hixl::tcp
