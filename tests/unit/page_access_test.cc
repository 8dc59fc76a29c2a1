// page_access_test.cc: RangeAccess against mappings of known protection.
#include "memory/page_access.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

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

}  // namespace
}  // namespace hixl
