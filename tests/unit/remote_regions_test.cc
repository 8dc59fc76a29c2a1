// Unit tests for hixl::RemoteRegions (src/memory/remote_regions.h): the
// initiator's copy of a target's region table. Addresses are never
// dereferenced, so fake ones are used throughout.
#include "memory/remote_regions.h"
#include "support/region_entries.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "wire/messages.h"

namespace hixl {
namespace {


using Clock = std::chrono::steady_clock;
using wire::RegionInfo;

// Which region of the table now contains [addr, addr+len).
bool Find(const RemoteRegions &rr, uint64_t addr, uint64_t len, RegionInfo *found) {
  const RemoteRegion *r = rr.Snapshot()->Find(addr, len);
  if (r == nullptr) return false;
  *found = r->range;
  return true;
}


int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Polls `pred` every millisecond for at most `ms` milliseconds.
template <typename Pred>
bool WaitUntil(Pred pred, int ms) {
  auto until = Clock::now() + std::chrono::milliseconds(ms);
  while (!pred()) {
    if (Clock::now() >= until) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool SameRegion(const RegionInfo &a, const RegionInfo &b) { return a.addr == b.addr && a.len == b.len; }

// ------------------------------------------------------------- edges

TEST(RemoteRegionsTest, EmptyTableContainsNothing) {
  RemoteRegions rr;
  RegionInfo found{7, 7};
  EXPECT_FALSE(rr.Contains(0x1000, 1));
  EXPECT_FALSE(Find(rr, 0x1000, 1, &found));
  EXPECT_EQ(found.addr, 7u);  // untouched on a miss
  EXPECT_EQ(found.len, 7u);
  rr.Replace({});
  EXPECT_FALSE(rr.Contains(0, 1));
}

TEST(RemoteRegionsTest, ContainsAtRangeEdges) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}, {0x5000, 0x100}}));

  // The whole region, and its first and last byte.
  EXPECT_TRUE(rr.Contains(0x1000, 0x1000));
  EXPECT_TRUE(rr.Contains(0x1000, 1));
  EXPECT_TRUE(rr.Contains(0x1fff, 1));
  EXPECT_TRUE(rr.Contains(0x1800, 0x800));
  // One byte past either end.
  EXPECT_FALSE(rr.Contains(0x0fff, 1));
  EXPECT_FALSE(rr.Contains(0x0fff, 2));
  EXPECT_FALSE(rr.Contains(0x2000, 1));
  EXPECT_FALSE(rr.Contains(0x1000, 0x1001));
  EXPECT_FALSE(rr.Contains(0x1fff, 2));
  // The gap between the regions, and a range spanning both.
  EXPECT_FALSE(rr.Contains(0x3000, 0x10));
  EXPECT_FALSE(rr.Contains(0x1000, 0x4100));
  // The second region.
  EXPECT_TRUE(rr.Contains(0x5000, 0x100));
  EXPECT_TRUE(rr.Contains(0x50ff, 1));
  EXPECT_FALSE(rr.Contains(0x50ff, 2));
  EXPECT_FALSE(rr.Contains(0x5100, 1));
  // Before everything, after everything.
  EXPECT_FALSE(rr.Contains(0, 1));
  EXPECT_FALSE(rr.Contains(0x10000, 1));
}

TEST(RemoteRegionsTest, ZeroLengthAndWrappingQueriesAreRefused) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}, {UINT64_MAX - 0xfff, 0x800}}));
  RegionInfo found{};
  EXPECT_FALSE(rr.Contains(0x1000, 0));
  EXPECT_FALSE(rr.Contains(0x1800, 0));
  EXPECT_FALSE(Find(rr, 0x1000, 0, &found));
  // addr + len wraps around 2^64.
  EXPECT_FALSE(rr.Contains(0x1800, UINT64_MAX));
  EXPECT_FALSE(rr.Contains(UINT64_MAX, 2));
  EXPECT_FALSE(rr.Contains(UINT64_MAX - 0xfff, UINT64_MAX));
  // A region near the top of the address space still works.
  EXPECT_TRUE(rr.Contains(UINT64_MAX - 0xfff, 0x800));
  EXPECT_FALSE(rr.Contains(UINT64_MAX - 0xfff, 0x801));
}

TEST(RemoteRegionsTest, FindSaysWhichRegion) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x5000, 0x100}, {0x1000, 0x1000}, {0x9000, 0x10}}));  // unsorted on purpose
  RegionInfo found{};
  ASSERT_TRUE(Find(rr, 0x1fff, 1, &found));
  EXPECT_TRUE(SameRegion(found, {0x1000, 0x1000}));
  ASSERT_TRUE(Find(rr, 0x5000, 0x100, &found));
  EXPECT_TRUE(SameRegion(found, {0x5000, 0x100}));
  ASSERT_TRUE(Find(rr, 0x9008, 8, &found));
  EXPECT_TRUE(SameRegion(found, {0x9000, 0x10}));
  found = {1, 2};
  EXPECT_FALSE(Find(rr, 0x9008, 9, &found));
  EXPECT_TRUE(SameRegion(found, {1, 2}));
}

TEST(RemoteRegionsTest, OverlappingRegions) {
  RemoteRegions rr;
  // A big region, a region inside it, and one that straddles its end.
  const RegionInfo a{0x1000, 0x2000};  // [0x1000, 0x3000)
  const RegionInfo b{0x2000, 0x800};   // [0x2000, 0x2800)
  const RegionInfo c{0x2800, 0x1800};  // [0x2800, 0x4000)
  rr.Replace(hixl_test::HostEntries({c, a, b}));
  RegionInfo found{};

  // Only A holds it (before B and C start).
  ASSERT_TRUE(Find(rr, 0x1f00, 0x200, &found));
  EXPECT_TRUE(SameRegion(found, a));
  // Spans B's end but A holds all of it.
  ASSERT_TRUE(Find(rr, 0x2700, 0x200, &found));
  EXPECT_TRUE(SameRegion(found, a));
  // Spans A's end: only C holds it.
  ASSERT_TRUE(Find(rr, 0x2f00, 0x200, &found));
  EXPECT_TRUE(SameRegion(found, c));
  // Held by A and B: either is a right answer, as long as it contains it.
  ASSERT_TRUE(Find(rr, 0x2100, 0x100, &found));
  EXPECT_TRUE(SameRegion(found, a) || SameRegion(found, b));
  EXPECT_TRUE(found.addr <= 0x2100 && found.addr + found.len >= 0x2200);
  // From inside A to past C's end: nobody.
  EXPECT_FALSE(rr.Contains(0x2f00, 0x1200));
  // The union covers [0x1000, 0x4000) but no single region does.
  EXPECT_FALSE(rr.Contains(0x1000, 0x3000));
}

TEST(RemoteRegionsTest, BigRegionBehindManySmallOnesIsFound) {
  // The search has to look back past many later-starting small regions to
  // find the big one that starts first.
  RemoteRegions rr;
  std::vector<RegionInfo> regions;
  const RegionInfo big{0x1000, 0x100000};
  regions.push_back(big);
  for (uint64_t i = 0; i < 200; ++i) regions.push_back({0x2000 + i * 0x100, 0x10});
  rr.Replace(hixl_test::HostEntries(regions));

  RegionInfo found{};
  // Between two small regions, and across several of them.
  ASSERT_TRUE(Find(rr, 0x2010 + 50 * 0x100, 0x20, &found));
  EXPECT_TRUE(SameRegion(found, big));
  ASSERT_TRUE(Find(rr, 0x2005, 0x1000, &found));
  EXPECT_TRUE(SameRegion(found, big));
  // Inside one small region: the small one or the big one.
  ASSERT_TRUE(Find(rr, 0x2000 + 7 * 0x100, 0x10, &found));
  EXPECT_TRUE(SameRegion(found, big) || SameRegion(found, {0x2000 + 7 * 0x100, 0x10}));
  // Past the big region's end.
  EXPECT_FALSE(rr.Contains(0x100ff0, 0x20));
}

TEST(RemoteRegionsTest, SameStartDifferentLengths) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}, {0x1000, 0x100}}));
  RegionInfo found{};
  ASSERT_TRUE(Find(rr, 0x1000, 0x800, &found));
  EXPECT_TRUE(SameRegion(found, {0x1000, 0x1000}));
  ASSERT_TRUE(Find(rr, 0x1000, 0x10, &found));
  EXPECT_EQ(found.addr, 0x1000u);
}

TEST(RemoteRegionsTest, ReplaceDropsTheOldTable) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}}));
  EXPECT_TRUE(rr.Contains(0x1000, 0x10));
  rr.Replace(hixl_test::HostEntries({{0x8000, 0x100}}));
  EXPECT_FALSE(rr.Contains(0x1000, 0x10));
  EXPECT_TRUE(rr.Contains(0x8000, 0x100));
  rr.Replace({});
  EXPECT_FALSE(rr.Contains(0x8000, 0x100));
}

// ------------------------------------------------------------- Revoke

TEST(RemoteRegionsTest, RevokeRemovesExactlyThatRegion) {
  RemoteRegions rr;
  const RegionInfo big{0x1000, 0x1000};     // [0x1000, 0x2000)
  const RegionInfo head{0x1000, 0x800};     // same start, shorter
  const RegionInfo tail{0x1800, 0x800};     // inside big
  const RegionInfo other{0x9000, 0x100};
  rr.Replace(hixl_test::HostEntries({big, head, tail, other}));
  RegionInfo found{};

  // No region is exactly (0x1000, 0x801) or (0x1800, 0x100): nothing changes.
  rr.Revoke(0x1000, 0x801, 1);
  rr.Revoke(0x1800, 0x100, 1);
  rr.Revoke(0x1001, 0x800, 1);
  EXPECT_TRUE(rr.Contains(0x1000, 0x1000));
  EXPECT_TRUE(rr.Contains(0x9000, 0x100));

  // Revoking the big region leaves the two overlapping ones.
  rr.Revoke(big.addr, big.len, 1);
  EXPECT_FALSE(rr.Contains(0x1000, 0x1000));
  EXPECT_FALSE(rr.Contains(0x17f0, 0x20));  // spans head and tail: no single region
  ASSERT_TRUE(Find(rr, 0x1000, 0x800, &found));
  EXPECT_TRUE(SameRegion(found, head));
  ASSERT_TRUE(Find(rr, 0x1800, 0x800, &found));
  EXPECT_TRUE(SameRegion(found, tail));
  EXPECT_TRUE(rr.Contains(0x9000, 0x100));

  // Revoking head leaves tail.
  rr.Revoke(head.addr, head.len, 1);
  EXPECT_FALSE(rr.Contains(0x1000, 1));
  EXPECT_TRUE(rr.Contains(0x1800, 0x800));

  // Revoking twice is harmless.
  rr.Revoke(head.addr, head.len, 1);
  EXPECT_TRUE(rr.Contains(0x1800, 0x800));

  rr.Revoke(tail.addr, tail.len, 1);
  EXPECT_FALSE(rr.Contains(0x1800, 1));
  EXPECT_TRUE(rr.Contains(0x9000, 0x100));
  rr.Revoke(other.addr, other.len, 1);
  EXPECT_FALSE(rr.Contains(0x9000, 1));
}

TEST(RemoteRegionsTest, ATableAppliedAfterALaterRevocationDoesNotBringTheRegionBack) {
  // Threads that each read part of the control stream apply what they read
  // in any order: a table (frame 3) applied after a REVOKE (frame 5) must
  // not revive the region, a table sent after the revocation (frame 7, the
  // memory registered again) shows it, and a table older than the one in
  // place (frame 6 after 7) changes nothing.
  RemoteRegions rr;
  const RegionInfo a{0x1000, 0x1000}, b{0x4000, 0x1000}, c{0x8000, 0x1000};
  rr.Replace(hixl_test::HostEntries({a, b}));
  rr.Revoke(a.addr, a.len, 5);
  EXPECT_FALSE(rr.Contains(a.addr, a.len));
  rr.Replace(hixl_test::HostEntries({a, b, c}), 3);
  EXPECT_FALSE(rr.Contains(a.addr, a.len)) << "revived by an older table";
  EXPECT_TRUE(rr.Contains(b.addr, b.len));
  EXPECT_TRUE(rr.Contains(c.addr, c.len));
  rr.Replace(hixl_test::HostEntries({a, b}), 7);
  EXPECT_TRUE(rr.Contains(a.addr, a.len));
  EXPECT_FALSE(rr.Contains(c.addr, c.len));
  rr.Replace(hixl_test::HostEntries({c}), 6);
  EXPECT_TRUE(rr.Contains(a.addr, a.len)) << "an older table replaced a newer one";
  EXPECT_FALSE(rr.Contains(c.addr, c.len));
  // Revocations applied out of order too: the table in between keeps the
  // one revoked after it out, and lets the one revoked before it back.
  rr.Revoke(b.addr, b.len, 12);
  rr.Revoke(a.addr, a.len, 9);
  rr.Replace(hixl_test::HostEntries({a, b}), 10);
  EXPECT_TRUE(rr.Contains(a.addr, a.len));
  EXPECT_FALSE(rr.Contains(b.addr, b.len));
  // A revocation older than the table in place: the table knows better.
  rr.Revoke(a.addr, a.len, 8);
  EXPECT_TRUE(rr.Contains(a.addr, a.len));
}

TEST(RemoteRegionsTest, RevokeTheInnerRegionKeepsTheOuter) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}, {0x1400, 0x100}}));
  rr.Revoke(0x1400, 0x100, 1);
  RegionInfo found{};
  ASSERT_TRUE(Find(rr, 0x1400, 0x100, &found));
  EXPECT_TRUE(SameRegion(found, {0x1000, 0x1000}));
}

TEST(RemoteRegionsTest, SearchStillCorrectAfterRevokeShrinksMaxEnd) {
  // After the big region goes, a query that only it covered must fail even
  // though later regions remain.
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x10000}, {0x2000, 0x10}, {0x3000, 0x10}}));
  EXPECT_TRUE(rr.Contains(0x3100, 0x10));
  rr.Revoke(0x1000, 0x10000, 1);
  EXPECT_FALSE(rr.Contains(0x3100, 0x10));
  EXPECT_FALSE(rr.Contains(0x2000, 0x20));
  EXPECT_TRUE(rr.Contains(0x2000, 0x10));
  EXPECT_TRUE(rr.Contains(0x3000, 0x10));
}

// ------------------------------------------------------------- Hold

TEST(RemoteRegionsTest, HoldSeesTheTable) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}}));
  RemoteRegions::Hold hold(rr);
  EXPECT_TRUE(hold.Contains(0x1000, 0x1000));
  EXPECT_FALSE(hold.Contains(0x1000, 0x1001));
  EXPECT_FALSE(hold.Contains(0x2000, 1));
}

TEST(RemoteRegionsTest, RevokeWaitsForHold) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}, {0x8000, 0x100}}));

  std::atomic<bool> started{false};
  std::atomic<bool> revoked{false};
  std::atomic<int64_t> revoked_at{0};
  std::optional<RemoteRegions::Hold> hold;
  hold.emplace(rr);
  ASSERT_TRUE(hold->Contains(0x1000, 0x1000));

  std::thread t([&] {
    started = true;
    rr.Revoke(0x1000, 0x1000, 1);
    revoked_at = NowNs();
    revoked = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }, 500));
  // Give Revoke time to reach the lock: it must stay blocked.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(revoked.load()) << "Revoke returned while a Hold was alive";
  // The held range stays valid meanwhile.
  EXPECT_TRUE(hold->Contains(0x1000, 0x1000));

  const int64_t released_at = NowNs();
  hold.reset();
  EXPECT_TRUE(WaitUntil([&] { return revoked.load(); }, 500)) << "Revoke did not return after the Hold ended";
  t.join();
  EXPECT_GE(revoked_at.load(), released_at);
  EXPECT_FALSE(rr.Contains(0x1000, 1));
  EXPECT_TRUE(rr.Contains(0x8000, 0x100));
}

TEST(RemoteRegionsTest, ReplaceWaitsForHold) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}}));

  std::atomic<bool> started{false};
  std::atomic<bool> replaced{false};
  std::atomic<int64_t> replaced_at{0};
  std::optional<RemoteRegions::Hold> hold;
  hold.emplace(rr);

  std::thread t([&] {
    started = true;
    rr.Replace(hixl_test::HostEntries({{0x4000, 0x100}}));
    replaced_at = NowNs();
    replaced = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }, 500));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(replaced.load()) << "Replace returned while a Hold was alive";
  EXPECT_TRUE(hold->Contains(0x1000, 0x1000));
  EXPECT_FALSE(hold->Contains(0x4000, 0x100));

  const int64_t released_at = NowNs();
  hold.reset();
  EXPECT_TRUE(WaitUntil([&] { return replaced.load(); }, 500));
  t.join();
  EXPECT_GE(replaced_at.load(), released_at);
  EXPECT_FALSE(rr.Contains(0x1000, 1));
  EXPECT_TRUE(rr.Contains(0x4000, 0x100));
}

TEST(RemoteRegionsTest, HoldsDoNotBlockEachOtherOrReaders) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x1000}}));
  RemoteRegions::Hold hold(rr);
  std::atomic<bool> done{false};
  std::atomic<bool> seen{false};
  std::thread t([&] {
    RemoteRegions::Hold other(rr);
    RegionInfo found{};
    seen = other.Contains(0x1000, 0x10) && rr.Contains(0x1000, 0x10) && Find(rr, 0x1000, 0x10, &found);
    done = true;
  });
  EXPECT_TRUE(WaitUntil([&] { return done.load(); }, 500)) << "a reader blocked behind a Hold";
  t.join();
  EXPECT_TRUE(seen.load());
}

TEST(RemoteRegionsTest, ConcurrentRevokesAndLookups) {
  // Lookups racing with Revoke never see a half-built table: every lookup of
  // a region that is never revoked succeeds.
  RemoteRegions rr;
  std::vector<RegionInfo> regions;
  for (uint64_t i = 0; i < 256; ++i) regions.push_back({0x100000 + i * 0x1000, 0x800});
  regions.push_back({0x10000000, 0x1000});  // never revoked
  rr.Replace(hixl_test::HostEntries(regions));

  std::atomic<bool> stop{false};
  std::atomic<int> misses{0};
  std::thread reader([&] {
    for (int iter = 0; iter < 200000 && !stop.load(); ++iter) {
      RemoteRegions::Hold h(rr);
      if (!h.Contains(0x10000000, 0x1000)) ++misses;
      if (!rr.Contains(0x10000800, 0x10)) ++misses;
    }
  });
  for (uint64_t i = 0; i < 256; ++i) rr.Revoke(0x100000 + i * 0x1000, 0x800, 1);
  stop = true;
  reader.join();
  EXPECT_EQ(misses.load(), 0);
  for (uint64_t i = 0; i < 256; ++i) EXPECT_FALSE(rr.Contains(0x100000 + i * 0x1000, 1));
  EXPECT_TRUE(rr.Contains(0x10000000, 0x1000));
}

// ------------------------------------------------------------- Regions, Live

TEST(RemoteRegionsTest, RegionsIsACopyThatOutlivesRevocations) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x9000, 0x100}, {0x1000, 0x800}, {0x1000, 0x1000}}));
  size_t seen = 0;
  uint64_t last_addr = 0;
  for (const auto &r : rr.Regions()) {
    // The table in place is replaced under the loop; the entries walked stay.
    rr.Revoke(r->range.addr, r->range.len, 1);
    EXPECT_GE(r->range.addr, last_addr);  // by address
    last_addr = r->range.addr;
    ++seen;
  }
  EXPECT_EQ(seen, 3u);
  EXPECT_TRUE(rr.Regions().empty());
}

TEST(RemoteRegionsTest, LiveFindsOnlyAnEntryStillInPlace) {
  RemoteRegions rr;
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x800}, {0x1000, 0x1000}, {0x4000, 0x100}}));
  const auto snapshot = rr.Snapshot();
  const RemoteRegion *longer = snapshot->Find(0x1000, 0x1000);
  ASSERT_NE(longer, nullptr);
  EXPECT_EQ(rr.Live(longer).get(), longer);  // same start as another entry: this one

  // An equal table keeps its entries; a revoked one is gone even when
  // registered again (a new entry, possibly with other keys).
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x800}, {0x1000, 0x1000}, {0x4000, 0x100}}), 1);
  EXPECT_EQ(rr.Live(longer).get(), longer);
  rr.Revoke(0x1000, 0x1000, 2);
  EXPECT_EQ(rr.Live(longer), nullptr);
  rr.Replace(hixl_test::HostEntries({{0x1000, 0x800}, {0x1000, 0x1000}}), 3);
  EXPECT_EQ(rr.Live(longer), nullptr);
  ASSERT_NE(rr.Snapshot()->Find(0x1000, 0x1000), nullptr);
  EXPECT_NE(rr.Snapshot()->Find(0x1000, 0x1000), longer);
}

}  // namespace
}  // namespace hixl
