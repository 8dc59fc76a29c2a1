// page_access_test.cc: RangeAccess against mappings of known protection.
#include "memory/host/page_access.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "memory/registry.h"

namespace hixl {
namespace {

constexpr unsigned kRW = kPageRead | kPageWrite;

// Five pages: rw, r, none, (unmapped), rw.
class PageAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *p = mmap(nullptr, 5 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    base_ = reinterpret_cast<uintptr_t>(p);
    ASSERT_EQ(mprotect(Page(1), page_, PROT_READ), 0);
    ASSERT_EQ(mprotect(Page(2), page_, PROT_NONE), 0);
    ASSERT_EQ(munmap(Page(3), page_), 0);
  }
  void TearDown() override {
    munmap(Page(0), 3 * page_);
    munmap(Page(4), page_);
  }
  void *Page(size_t i) const { return reinterpret_cast<void *>(At(i)); }
  uintptr_t At(size_t i) const { return base_ + i * page_; }

  size_t page_ = 0;
  uintptr_t base_ = 0;
};

TEST_F(PageAccessTest, EachPageAlone) {
  EXPECT_EQ(RangeAccess(At(0), page_), kRW);
  EXPECT_EQ(RangeAccess(At(1), page_), unsigned{kPageRead});
  EXPECT_EQ(RangeAccess(At(2), page_), 0u);
  EXPECT_EQ(RangeAccess(At(3), page_), 0u);
  EXPECT_EQ(RangeAccess(At(4), page_), kRW);
}

TEST_F(PageAccessTest, RangesAcrossPagesGetWhatAllOfThemAllow) {
  EXPECT_EQ(RangeAccess(At(0) + 100, 1), kRW);
  EXPECT_EQ(RangeAccess(At(1) - 1, 2), unsigned{kPageRead});  // last byte of page 0, first of page 1
  EXPECT_EQ(RangeAccess(At(0), 2 * page_), unsigned{kPageRead});
  EXPECT_EQ(RangeAccess(At(0), 3 * page_), 0u);
  EXPECT_EQ(RangeAccess(At(4) - 1, 2), 0u);  // the hole before page 4
  EXPECT_EQ(RangeAccess(At(4) + page_ - 1, 2), RangeAccess(At(4) + page_, 1) & kRW);  // whatever follows page 4
  EXPECT_EQ(RangeAccess(At(0), 0), kRW);                                              // nothing to access
  EXPECT_EQ(RangeAccess(UINTPTR_MAX - 10, 100), 0u);                                  // past the end of memory
}

TEST_F(PageAccessTest, RegistryAllowsByRegionThenByRange) {
  Region whole;  // rw, r: the region as a whole is read-only
  whole.addr = At(0);
  whole.len = 2 * page_;
  EXPECT_TRUE(Registry::Allows(whole, At(0), 2 * page_, kPageRead));
  EXPECT_FALSE(Registry::Allows(whole, At(0), 2 * page_, kPageWrite));
  EXPECT_TRUE(Registry::Allows(whole, At(0), page_, kPageWrite));  // the writable part of it
  EXPECT_FALSE(Registry::Allows(whole, At(1), 1, kPageWrite));
  EXPECT_EQ(whole.access.load(), Region::kAccessKnown | kPageRead);
  Region none;
  none.addr = At(2);
  none.len = page_;
  EXPECT_FALSE(Registry::Allows(none, At(2), page_, kPageRead));
  Region rw;
  rw.addr = At(4);
  rw.len = page_;
  EXPECT_TRUE(Registry::Allows(rw, At(4), page_, kPageRead | kPageWrite));
  EXPECT_EQ(rw.access.load(), Region::kAccessKnown | kRW);
}

TEST_F(PageAccessTest, OneMapAnswersForEveryPartOfItsRange) {
  AccessMap m = AccessMap::Of(At(0), 5 * page_);
  EXPECT_EQ(m.whole(), 0u);
  EXPECT_EQ(m.Access(At(0), page_), kRW);
  EXPECT_EQ(m.Access(At(0) + 10, page_ - 10), kRW);
  EXPECT_EQ(m.Access(At(1) - 1, 2), unsigned{kPageRead});
  EXPECT_EQ(m.Access(At(1), page_), unsigned{kPageRead});
  EXPECT_EQ(m.Access(At(2), 1), 0u);
  EXPECT_EQ(m.Access(At(3), page_), 0u);
  EXPECT_EQ(m.Access(At(4), page_), kRW);
  EXPECT_EQ(m.Access(At(4), page_ + 1), 0u);  // past the range it was read for
  EXPECT_EQ(m.Access(At(0) - 1, 1), 0u);      // before it
}

TEST_F(PageAccessTest, MemoryMadeAccessibleLaterBecomesUsable) {
  // A reservation committed after registration: refused at first, allowed
  // once the map is read again (at most every kMapRereadMs).
  Region r;
  r.addr = At(1);
  r.len = 2 * page_;  // r, none
  EXPECT_FALSE(Registry::Allows(r, At(2), page_, kPageRead));
  ASSERT_EQ(mprotect(Page(1), 2 * page_, PROT_READ | PROT_WRITE), 0);
  EXPECT_FALSE(Registry::Allows(r, At(2), page_, kPageRead));  // the map read a moment ago still says no
  usleep(static_cast<useconds_t>(Registry::kMapRereadMs) * 1000 + 20000);
  EXPECT_TRUE(Registry::Allows(r, At(2), page_, kPageRead | kPageWrite));
  EXPECT_EQ(r.access.load(), Region::kAccessKnown | kRW);  // and from now on without a look
}

TEST_F(PageAccessTest, ProbesFindTheFirstRangeThatMayNotBeTouched) {
  // Few pages: one-byte probes with process_vm_readv/writev, no maps read.
  auto first = [](std::vector<MemRange> r, unsigned need) { return FirstInaccessible(r.data(), r.size(), need); };
  EXPECT_EQ(first({{At(0), page_}, {At(4) + 7, page_ - 7}}, kRW), 2u);
  EXPECT_EQ(first({{At(0) + 5, 2 * page_ - 10}}, kPageRead), 1u);  // rw then r: readable
  EXPECT_EQ(first({{At(0) + 5, 2 * page_ - 10}}, kPageWrite), 0u);  // its second page is read-only
  EXPECT_EQ(first({{At(0), 16}, {At(1) + 100, 16}}, kPageWrite), 1u);
  EXPECT_EQ(first({{At(0), 16}, {At(2) + 100, 16}}, kPageRead), 1u);    // PROT_NONE
  EXPECT_EQ(first({{At(4), 16}, {At(3) + 100, 16}}, kPageRead), 1u);    // unmapped
  EXPECT_EQ(first({{At(4) - 1, 2}}, kPageRead), 0u);                    // the hole's last byte
  EXPECT_EQ(first({{At(1) - 1, page_ + 1}}, kPageRead | kPageWrite), 0u);  // ends inside page 1
  EXPECT_EQ(first({}, kRW), 0u);
  // Writing back changed nothing.
  auto *bytes = static_cast<const unsigned char *>(Page(0));
  bool zero = true;
  for (size_t i = 0; i < page_; ++i) zero = zero && bytes[i] == 0;
  EXPECT_TRUE(zero);
}

TEST_F(PageAccessTest, ManySmallRangesOnFewPagesAreProbedOnce) {
  // A batch of many small descriptors: the pages they touch are counted once
  // each, so 1000 ranges on two pages are two probes, not a read of the
  // maps (which counting a page per range did: some ms in a large process).
  std::vector<MemRange> r;
  for (size_t i = 0; i < 1000; ++i) r.push_back({(i % 2 ? At(4) : At(0)) + (i * 16) % page_, 16});
  const uint64_t reads = MapsReadsForTest();
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kRW), r.size());
  r[700] = {At(2) + 40, 16};  // PROT_NONE
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageRead), 700u);
  r[300] = {At(1) + 40, 16};  // read-only
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageRead), 700u);
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageWrite), 300u);
  EXPECT_EQ(MapsReadsForTest(), reads);
}

TEST_F(PageAccessTest, TheFirstFailingRangeIsFoundWhateverTheOrderOfItsPages) {
  // Pages are probed in address order; the answer is by range order.
  auto first = [](std::vector<MemRange> r, unsigned need) { return FirstInaccessible(r.data(), r.size(), need); };
  EXPECT_EQ(first({{At(4), 16}, {At(2) + 8, 16}, {At(1) + 8, 16}}, kPageWrite), 1u);
  EXPECT_EQ(first({{At(4), 16}, {At(1) + 8, 16}, {At(2) + 8, 16}}, kPageWrite), 1u);
  EXPECT_EQ(first({{At(4), 16}, {At(0), 16}, {At(2) + 8, 16}, {At(1) + 8, 16}}, kPageRead), 2u);
}

TEST_F(PageAccessTest, ASharedFileMappingPastTheEndOfItsFileIsRefused) {
  // The maps allow it, but touching it is SIGBUS: the probes see it.
  char path[] = "/tmp/hixl-page-access-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(page_)), 0);
  void *p = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(p, MAP_FAILED);
  const auto file = reinterpret_cast<uintptr_t>(p);
  std::vector<MemRange> r{{file + 8, 16}, {file + page_ + 8, 16}};
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageRead), 1u);
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageWrite), 1u);
  r.pop_back();
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kRW), 1u);
  munmap(p, 2 * page_);
}

TEST_F(PageAccessTest, ManyPagesAreJudgedFromTheMapsInstead) {
  // More pages than are worth probing (unless the last read of the maps was
  // slow) and than one process_vm_* call takes: the answers are the same.
  const size_t pages = 4096 + 3;
  void *p = mmap(nullptr, pages * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  const auto big = reinterpret_cast<uintptr_t>(p);
  ASSERT_EQ(mprotect(reinterpret_cast<void *>(big + (pages - 1) * page_), page_, PROT_READ), 0);
  std::vector<MemRange> r{{big, (pages - 1) * page_}, {At(0), page_}};
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kRW), 2u);
  r[0].len += 1;  // into the read-only page
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageRead), 2u);
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageWrite), 0u);
  r = {{big, 8 * page_}, {At(1), page_}, {big + page_, (pages - 2) * page_}};  // few pages each, many in all
  EXPECT_EQ(FirstInaccessible(r.data(), r.size(), kPageWrite), 1u);
  munmap(p, pages * page_);
}

}  // namespace
}  // namespace hixl
