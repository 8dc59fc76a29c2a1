// Unit tests for hixl::BatchCheck (src/engine/batch_check.h): per-descriptor
// bounds, local lookup and pinning, remote lookup, and merging. Nothing is
// dereferenced, so fake addresses are used (with no access check: local_need
// 0), except in the test of the local memory's access.
#include "engine/batch_check.h"

#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory/host/page_access.h"
#include "memory/registry.h"
#include "memory/remote_regions.h"
#include "support/region_entries.h"
#include "wire/messages.h"

namespace hixl {
namespace {

using Verdict = BatchCheck::Verdict;

// Local regions (registered), and addresses outside all of them.
constexpr uintptr_t kL1 = 0x10000000;  // [kL1, kL1 + 0x10000)
constexpr uintptr_t kL2 = 0x20000000;  // [kL2, kL2 + 0x10000)
constexpr uintptr_t kL3 = 0x30000000;  // registered, never used: stays unpinned
constexpr size_t kLocalLen = 0x10000;
constexpr uintptr_t kUnreg = 0x50000000;
// Remote regions.
constexpr uint64_t kR1 = 0x70000000;  // [kR1, kR1 + 0x10000)
constexpr uint64_t kR2 = 0x80000000;  // [kR2, kR2 + 0x10000)
constexpr uint64_t kRemoteLen = 0x10000;

class BatchCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemHandle h = nullptr;
    ASSERT_EQ(reg_.Register(kL1, kLocalLen, &h), SUCCESS);
    h1_ = h;
    ASSERT_EQ(reg_.Register(kL2, kLocalLen, &h), SUCCESS);
    h2_ = h;
    ASSERT_EQ(reg_.Register(kL3, kLocalLen, &h), SUCCESS);
    table_ = reg_.Snapshot();
    remote_.Replace(hixl_test::HostEntries({{kR1, kRemoteLen}, {kR2, kRemoteLen}}));
  }

  const Region &Local(uintptr_t addr) const {
    for (const auto &r : table_->regions()) {
      if (r->addr == addr) return *r;
    }
    ADD_FAILURE() << "no local region at " << addr;
    return *table_->regions().front();
  }
  int64_t Pins(uintptr_t addr) const { return Local(addr).pins.load(); }

  Registry reg_{16};
  MemHandle h1_ = nullptr;
  MemHandle h2_ = nullptr;
  std::shared_ptr<const RegionTable> table_;
  RemoteRegions remote_;
  PinSet pins_;
  std::vector<Piece> direct_;
  std::vector<Piece> relayed_;
};

void ExpectPiece(const Piece &p, uintptr_t local, uint64_t remote, size_t len) {
  EXPECT_EQ(p.local, local);
  EXPECT_EQ(p.remote, remote);
  EXPECT_EQ(p.len, len);
}

// ------------------------------------------------------------- verdicts

TEST_F(BatchCheckTest, AllGoodIsOkWithIndexAtEnd) {
  auto remote_table1 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table1, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kL1, kR1, 0x100}, {kL2 + 0x200, kR2 + 0x400, 0x10}};
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  EXPECT_EQ(res.index, descs.size());
  ASSERT_EQ(direct_.size(), 2u);
  ExpectPiece(direct_[0], kL1, kR1, 0x100);
  ExpectPiece(direct_[1], kL2 + 0x200, kR2 + 0x400, 0x10);
  EXPECT_TRUE(relayed_.empty());
}

TEST_F(BatchCheckTest, EmptyBatchIsOk) {
  auto remote_table2 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table2, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs;
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  EXPECT_EQ(res.index, 0u);
  EXPECT_TRUE(direct_.empty());
  EXPECT_TRUE(pins_.empty());
}

TEST_F(BatchCheckTest, WholeRegionsOnBothSidesAreAccepted) {
  auto remote_table3 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table3, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kL1, kR1, kLocalLen}};
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  ASSERT_EQ(direct_.size(), 1u);
  ExpectPiece(direct_[0], kL1, kR1, kLocalLen);
}

struct BadCase {
  const char *what;
  TransferOpDesc desc;
};

TEST_F(BatchCheckTest, BadDescriptorsAreRefusedAtTheirIndex) {
  const BadCase cases[] = {
      {"len 0", {kL1, kR1, 0}},
      {"local 0", {0, kR1, 0x10}},
      {"local wraps", {UINTPTR_MAX - 0xf, kR1, 0x20}},
      {"local ends at 2^64", {UINTPTR_MAX - 0xf, kR1, 0x10}},
      {"remote wraps", {kL1, UINT64_MAX - 0x7, 0x10}},
      {"len wraps both", {kL1, kR1, SIZE_MAX}},
  };
  for (const BadCase &c : cases) {
    for (bool pool_on : {false, true}) {
      SCOPED_TRACE(testing::Message() << c.what << (pool_on ? " (pool on)" : " (pool off)"));
      auto remote_table4 = remote_.Snapshot();
      BatchCheck check(*table_, *remote_table4, pool_on, /*local_need=*/0);
      PinSet pins;
      std::vector<Piece> direct, relayed;
      std::vector<TransferOpDesc> descs = {{kL1, kR1, 0x10}, {kL1 + 0x100, kR1 + 0x100, 0x10}, c.desc,
                                           {kL1 + 0x200, kR1 + 0x200, 0x10}};
      auto res = check.Run(descs, 0, &pins, &direct, &relayed);
      EXPECT_EQ(res.verdict, Verdict::kBadDescriptor);
      EXPECT_EQ(res.index, 2u);
      // The descriptors before it were checked; the one after was not.
      ASSERT_EQ(direct.size(), 2u);
      ExpectPiece(direct[0], kL1, kR1, 0x10);
      ExpectPiece(direct[1], kL1 + 0x100, kR1 + 0x100, 0x10);
      EXPECT_TRUE(relayed.empty());
    }
  }
}

TEST_F(BatchCheckTest, ABatchWhoseTotalPasses2To64IsRefused) {
  // Each descriptor fits its (huge) regions, but together they add up past
  // 2^64 bytes, which the transports would wrap around when they sum them.
  constexpr uintptr_t kBase = 0x10000;
  constexpr uint64_t kHalf = 1ull << 63;
  Registry reg(4);
  MemHandle h = nullptr;
  ASSERT_EQ(reg.Register(kBase, kHalf, &h), SUCCESS);
  auto table = reg.Snapshot();
  RemoteRegions remote;
  remote.Replace(hixl_test::HostEntries({{kBase, kHalf}}));
  auto snap101 = remote.Snapshot();
  BatchCheck check(*table, *snap101, false, /*local_need=*/0);
  PinSet pins;
  std::vector<Piece> direct, relayed;
  std::vector<TransferOpDesc> descs = {{kBase, kBase, kHalf}, {kBase, kBase, kHalf}, {kBase, kBase, 0x10}};
  auto res = check.Run(descs, 0, &pins, &direct, &relayed);
  EXPECT_EQ(res.verdict, Verdict::kBadDescriptor);
  EXPECT_EQ(res.index, 1u);
}

TEST_F(BatchCheckTest, BadDescriptorFirst) {
  auto remote_table5 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table5, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kL1, kR1, 0}};
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kBadDescriptor);
  EXPECT_EQ(res.index, 0u);
  EXPECT_TRUE(direct_.empty());
  EXPECT_EQ(Pins(kL1), 0);
}

TEST_F(BatchCheckTest, LocalUnregisteredWithPoolOff) {
  struct Case {
    const char *what;
    TransferOpDesc desc;
  };
  const Case cases[] = {
      {"outside every region", {kUnreg, kR1, 0x10}},
      {"one byte before a region", {kL1 - 1, kR1, 0x10}},
      {"crosses a region's end", {kL1 + kLocalLen - 0x8, kR1, 0x10}},
      {"starts at a region's end", {kL1 + kLocalLen, kR1, 0x10}},
      {"bigger than the region", {kL1, kR1, kLocalLen + 1}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    auto remote_table6 = remote_.Snapshot();
    BatchCheck check(*table_, *remote_table6, false, /*local_need=*/0);
    PinSet pins;
    std::vector<Piece> direct, relayed;
    std::vector<TransferOpDesc> descs = {{kL2, kR2, 0x10}, c.desc, {kL2 + 0x10, kR2 + 0x10, 0x10}};
    auto res = check.Run(descs, 0, &pins, &direct, &relayed);
    EXPECT_EQ(res.verdict, Verdict::kLocalUnregistered);
    EXPECT_EQ(res.index, 1u);
    ASSERT_EQ(direct.size(), 1u);
    ExpectPiece(direct[0], kL2, kR2, 0x10);
    EXPECT_TRUE(relayed.empty());
  }
}

TEST_F(BatchCheckTest, LocalIsCheckedBeforeRemote) {
  auto remote_table7 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table7, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kUnreg, 0x1234, 0x10}};
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kLocalUnregistered);
  EXPECT_EQ(res.index, 0u);
}

TEST_F(BatchCheckTest, RemoteUnknown) {
  struct Case {
    const char *what;
    uint64_t remote;
    size_t len;
  };
  const Case cases[] = {
      {"outside every region", 0x1234, 0x10},
      {"crosses a region's end", kR1 + kRemoteLen - 0x8, 0x10},
      {"one byte before a region", kR1 - 1, 0x10},
      {"starts at the last region's end", kR2 + kRemoteLen, 0x10},
  };
  for (bool pool_on : {false, true}) {
    for (const Case &c : cases) {
      SCOPED_TRACE(testing::Message() << c.what << (pool_on ? " (pool on)" : " (pool off)"));
      auto remote_table8 = remote_.Snapshot();
      BatchCheck check(*table_, *remote_table8, pool_on, /*local_need=*/0);
      PinSet pins;
      std::vector<Piece> direct, relayed;
      std::vector<TransferOpDesc> descs = {{kL1, kR1, 0x10}, {kL1 + 0x10, kR1 + 0x10, 0x10},
                                           {kL1 + 0x1000, c.remote, c.len}, {kL1 + 0x2000, kR1 + 0x2000, 0x10}};
      auto res = check.Run(descs, 0, &pins, &direct, &relayed);
      EXPECT_EQ(res.verdict, Verdict::kRemoteUnknown);
      EXPECT_EQ(res.index, 2u);
      ASSERT_EQ(direct.size(), 1u);  // the first two merged
      ExpectPiece(direct[0], kL1, kR1, 0x20);
    }
  }
}

// ------------------------------------------------------------- pool on

TEST_F(BatchCheckTest, PoolOnSplitsDirectAndRelayed) {
  auto remote_table9 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table9, true, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {
      {kL1, kR1, 0x10},                      // direct
      {kUnreg, kR1 + 0x100, 0x20},           // relayed
      {kL2 + 0x40, kR2, 0x30},               // direct
      {kL1 + kLocalLen - 0x8, kR2 + 0x800, 0x10},  // crosses a local end: relayed
      {kUnreg + 0x1000, kR2 + 0x1000, 0x40},  // relayed
  };
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  EXPECT_EQ(res.index, descs.size());
  ASSERT_EQ(direct_.size(), 2u);
  ExpectPiece(direct_[0], kL1, kR1, 0x10);
  ExpectPiece(direct_[1], kL2 + 0x40, kR2, 0x30);
  ASSERT_EQ(relayed_.size(), 3u);
  ExpectPiece(relayed_[0], kUnreg, kR1 + 0x100, 0x20);
  ExpectPiece(relayed_[1], kL1 + kLocalLen - 0x8, kR2 + 0x800, 0x10);
  ExpectPiece(relayed_[2], kUnreg + 0x1000, kR2 + 0x1000, 0x40);
  EXPECT_EQ(Pins(kL1), 1);
  EXPECT_EQ(Pins(kL2), 1);
}

TEST_F(BatchCheckTest, PoolOnStillNeedsAKnownRemote) {
  auto remote_table10 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table10, true, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kUnreg, kR1, 0x10}, {kUnreg + 0x10, 0x1234, 0x10}};
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kRemoteUnknown);
  EXPECT_EQ(res.index, 1u);
  ASSERT_EQ(relayed_.size(), 1u);
  ExpectPiece(relayed_[0], kUnreg, kR1, 0x10);
}

TEST_F(BatchCheckTest, RevokedLocalRegionIsNotPinned) {
  // Deregistration began after the snapshot was taken: the region is still
  // in the table but refuses new pins.
  std::shared_ptr<Region> revoked = reg_.Revoke(h1_);
  ASSERT_NE(revoked, nullptr);
  {
    auto remote_table11 = remote_.Snapshot();
    BatchCheck check(*table_, *remote_table11, false, /*local_need=*/0);
    std::vector<TransferOpDesc> descs = {{kL2, kR1, 0x10}, {kL1, kR1 + 0x10, 0x10}};
    auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
    EXPECT_EQ(res.verdict, Verdict::kLocalUnregistered);
    EXPECT_EQ(res.index, 1u);
    EXPECT_EQ(revoked->pins.load(), 0);
  }
  {
    PinSet pins;
    std::vector<Piece> direct, relayed;
    auto remote_table12 = remote_.Snapshot();
    BatchCheck check(*table_, *remote_table12, true, /*local_need=*/0);
    std::vector<TransferOpDesc> descs = {{kL1, kR1, 0x10}, {kL1 + 0x10, kR1 + 0x10, 0x10}};
    auto res = check.Run(descs, 0, &pins, &direct, &relayed);
    EXPECT_EQ(res.verdict, Verdict::kOk);
    EXPECT_TRUE(direct.empty());
    ASSERT_EQ(relayed.size(), 1u);
    ExpectPiece(relayed[0], kL1, kR1, 0x20);
    EXPECT_EQ(revoked->pins.load(), 0);
    EXPECT_FALSE(pins.Holds(revoked.get()));
  }
}

// ------------------------------------------------------------- pins

TEST_F(BatchCheckTest, EachLocalRegionIsPinnedOnce) {
  auto remote_table13 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table13, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs;
  // Alternate between the two regions so the hint keeps missing.
  for (size_t i = 0; i < 10; ++i) {
    uintptr_t base = i % 2 == 0 ? kL1 : kL2;
    descs.push_back({base + i * 0x100, kR1 + i * 0x200, 0x10});
  }
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  ASSERT_EQ(res.verdict, Verdict::kOk);
  EXPECT_EQ(Pins(kL1), 1);
  EXPECT_EQ(Pins(kL2), 1);
  EXPECT_EQ(Pins(kL3), 0);
  EXPECT_TRUE(pins_.Holds(&Local(kL1)));
  EXPECT_TRUE(pins_.Holds(&Local(kL2)));
  EXPECT_FALSE(pins_.Holds(&Local(kL3)));
  EXPECT_EQ(direct_.size(), 10u);

  // A second Run with the same set pins nothing more.
  std::vector<TransferOpDesc> more = {{kL2 + 0x8000, kR2, 0x10}, {kL1 + 0x8000, kR2 + 0x100, 0x10}};
  auto snap102 = remote_.Snapshot();
  BatchCheck again(*table_, *snap102, false, /*local_need=*/0);
  ASSERT_EQ(again.Run(more, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);
  EXPECT_EQ(Pins(kL1), 1);
  EXPECT_EQ(Pins(kL2), 1);

  pins_.Release();
  EXPECT_EQ(Pins(kL1), 0);
  EXPECT_EQ(Pins(kL2), 0);
}

TEST_F(BatchCheckTest, PinsStayUntilReleasedAfterAFailure) {
  auto remote_table14 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table14, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kL1, kR1, 0x10}, {kL2, 0x1234, 0x10}};
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kRemoteUnknown);
  EXPECT_EQ(res.index, 1u);
  // L2 was found (and pinned) before its remote side was checked; either
  // way nothing is pinned twice and Release drops all.
  EXPECT_EQ(Pins(kL1), 1);
  EXPECT_LE(Pins(kL2), 1);
  pins_.Release();
  EXPECT_EQ(Pins(kL1), 0);
  EXPECT_EQ(Pins(kL2), 0);
}

// ------------------------------------------------------------- merging

TEST_F(BatchCheckTest, ContiguousOnBothSidesInOneRemoteRegionMerges) {
  auto remote_table15 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table15, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {
      {kL1, kR1, 0x10}, {kL1 + 0x10, kR1 + 0x10, 0x20}, {kL1 + 0x30, kR1 + 0x30, 0x30}};
  ASSERT_EQ(check.Run(descs, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);
  ASSERT_EQ(direct_.size(), 1u);
  ExpectPiece(direct_[0], kL1, kR1, 0x60);
}

TEST_F(BatchCheckTest, ContiguousOnOneSideOnlyDoesNotMerge) {
  auto remote_table16 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table16, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {
      {kL1, kR1, 0x10},
      {kL1 + 0x10, kR1 + 0x20, 0x10},  // local contiguous, remote not
      {kL1 + 0x30, kR1 + 0x30, 0x10},  // remote contiguous, local not
      {kL1 + 0x30, kR1 + 0x40, 0x10},  // remote contiguous, local repeats
  };
  ASSERT_EQ(check.Run(descs, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);
  ASSERT_EQ(direct_.size(), 4u);
  ExpectPiece(direct_[0], kL1, kR1, 0x10);
  ExpectPiece(direct_[1], kL1 + 0x10, kR1 + 0x20, 0x10);
  ExpectPiece(direct_[2], kL1 + 0x30, kR1 + 0x30, 0x10);
  ExpectPiece(direct_[3], kL1 + 0x30, kR1 + 0x40, 0x10);
}

TEST_F(BatchCheckTest, AdjacentRemoteRegionsDoNotMerge) {
  RemoteRegions remote;
  const uint64_t a = 0x90000000;
  remote.Replace(hixl_test::HostEntries({{a, 0x1000}, {a + 0x1000, 0x1000}}));
  auto remote_table17 = remote.Snapshot();
  BatchCheck check(*table_, *remote_table17, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {
      {kL1, a + 0x800, 0x800},            // end of the first remote region
      {kL1 + 0x800, a + 0x1000, 0x100},   // start of the second
      {kL1 + 0x900, a + 0x1100, 0x100},   // continues in the second: merges with the one before
  };
  ASSERT_EQ(check.Run(descs, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);
  ASSERT_EQ(direct_.size(), 2u);
  ExpectPiece(direct_[0], kL1, a + 0x800, 0x800);
  ExpectPiece(direct_[1], kL1 + 0x800, a + 0x1000, 0x200);
}

TEST_F(BatchCheckTest, AdjacentRemoteRegionsCoveredByABiggerOneMerge) {
  RemoteRegions remote;
  const uint64_t a = 0x90000000;
  remote.Replace(hixl_test::HostEntries({{a, 0x1000}, {a + 0x1000, 0x1000}, {a, 0x2000}}));
  auto remote_table18 = remote.Snapshot();
  BatchCheck check(*table_, *remote_table18, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kL1, a + 0x800, 0x800}, {kL1 + 0x800, a + 0x1000, 0x100}};
  ASSERT_EQ(check.Run(descs, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);
  // Whether it merges depends on which region each lookup returned; if it
  // merged, one remote region must hold the whole merged piece.
  ASSERT_GE(direct_.size(), 1u);
  ASSERT_LE(direct_.size(), 2u);
  size_t total = 0;
  for (const Piece &p : direct_) {
    EXPECT_TRUE(remote.Contains(p.remote, p.len));
    total += p.len;
  }
  EXPECT_EQ(total, 0x900u);
}

TEST_F(BatchCheckTest, ContiguousDescriptorsInTwoLocalRegionsStayTwoPieces) {
  // Two registered local regions that touch: a contiguous pair of
  // descriptors across them stays two pieces, each naming its own region
  // (a transport that needs keys takes the local one from the piece).
  Registry reg(4);
  MemHandle h;
  ASSERT_EQ(reg.Register(0x40000000, 0x1000, &h), SUCCESS);
  ASSERT_EQ(reg.Register(0x40001000, 0x1000, &h), SUCCESS);
  auto table = reg.Snapshot();
  auto snap103 = remote_.Snapshot();
  BatchCheck check(*table, *snap103, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{0x40000800, kR1, 0x800}, {0x40001000, kR1 + 0x800, 0x800}};
  PinSet pins;
  ASSERT_EQ(check.Run(descs, 0, &pins, &direct_, &relayed_).verdict, Verdict::kOk);
  ASSERT_EQ(direct_.size(), 2u);
  ExpectPiece(direct_[0], 0x40000800, kR1, 0x800);
  ExpectPiece(direct_[1], 0x40001000, kR1 + 0x800, 0x800);
  EXPECT_NE(direct_[0].local_region, direct_[1].local_region);
  EXPECT_EQ(direct_[0].local_region->addr, 0x40000000u);
  EXPECT_EQ(direct_[1].local_region->addr, 0x40001000u);
  EXPECT_EQ(direct_[0].remote_region, direct_[1].remote_region);
  EXPECT_EQ(direct_[0].remote_region->range.addr, kR1);
  for (const auto &r : table->regions()) EXPECT_EQ(r->pins.load(), 1);
}

TEST_F(BatchCheckTest, RelayedPiecesMergeToo) {
  auto remote_table19 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table19, true, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {
      {kUnreg, kR1, 0x10},
      {kL1, kR2, 0x10},                     // direct in between
      {kUnreg + 0x10, kR1 + 0x10, 0x10},    // continues the relayed piece
      {kL1 + 0x10, kR2 + 0x10, 0x10},       // continues the direct piece
  };
  ASSERT_EQ(check.Run(descs, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);
  ASSERT_EQ(relayed_.size(), 1u);
  ExpectPiece(relayed_[0], kUnreg, kR1, 0x20);
  ASSERT_EQ(direct_.size(), 1u);
  ExpectPiece(direct_[0], kL1, kR2, 0x20);
}

TEST_F(BatchCheckTest, DirectAndRelayedNeverMergeWithEachOther) {
  // Local kL1 + kLocalLen is right after the region: contiguous locally, but
  // one side is registered and the other is not.
  auto remote_table20 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table20, true, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{kL1 + kLocalLen - 0x10, kR1, 0x10}, {kL1 + kLocalLen, kR1 + 0x10, 0x10}};
  ASSERT_EQ(check.Run(descs, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);
  ASSERT_EQ(direct_.size(), 1u);
  ExpectPiece(direct_[0], kL1 + kLocalLen - 0x10, kR1, 0x10);
  ASSERT_EQ(relayed_.size(), 1u);
  ExpectPiece(relayed_[0], kL1 + kLocalLen, kR1 + 0x10, 0x10);
}

// ------------------------------------------------------------- refresh

TEST_F(BatchCheckTest, RunContinuesFromIndexAfterRemoteRefresh) {
  RemoteRegions remote;
  const uint64_t a = 0x90000000;  // small at first, bigger after the refresh
  const uint64_t b = 0xa0000000;  // appears with the refresh
  remote.Replace(hixl_test::HostEntries({{a, 0x20}}));
  auto remote_table21 = remote.Snapshot();
  BatchCheck check(*table_, *remote_table21, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {
      {kL1, a, 0x10},
      {kL1 + 0x10, a + 0x10, 0x10},     // merges with 0
      {kL1 + 0x20, a + 0x20, 0x10},     // past a's end until the refresh
      {kL2, b, 0x20},                   // unknown until the refresh
      {kL2 + 0x20, b + 0x20, 0x20},     // merges with 3
      {kL1 + 0x100, a + 0x100, 0x10},   // not contiguous
      {kUnreg, b + 0x100, 0x10},        // pool off: refused
  };
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  ASSERT_EQ(res.verdict, Verdict::kRemoteUnknown);
  ASSERT_EQ(res.index, 2u);
  ASSERT_EQ(direct_.size(), 1u);
  ExpectPiece(direct_[0], kL1, a, 0x20);
  EXPECT_EQ(Pins(kL1), 1);
  EXPECT_EQ(Pins(kL2), 0);

  remote.Replace(hixl_test::HostEntries({{a, 0x1000}, {b, 0x1000}}));
  auto refreshed1 = remote.Snapshot();
  check.SetRemote(*refreshed1);
  res = check.Run(descs, res.index, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kLocalUnregistered);
  EXPECT_EQ(res.index, 6u);
  ASSERT_EQ(direct_.size(), 3u);
  ExpectPiece(direct_[0], kL1, a, 0x30);  // kept from before, and extended
  ExpectPiece(direct_[1], kL2, b, 0x40);
  ExpectPiece(direct_[2], kL1 + 0x100, a + 0x100, 0x10);
  EXPECT_TRUE(relayed_.empty());
  EXPECT_EQ(Pins(kL1), 1);
  EXPECT_EQ(Pins(kL2), 1);
}

TEST_F(BatchCheckTest, RefreshWithNewRegionKeepsEarlierPiecesSeparate) {
  RemoteRegions remote;
  const uint64_t a = 0x90000000;
  remote.Replace(hixl_test::HostEntries({{a, 0x1000}}));
  auto remote_table22 = remote.Snapshot();
  BatchCheck check(*table_, *remote_table22, true, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {
      {kL1, a + 0xff0, 0x10},          // the end of a
      {kL1 + 0x10, a + 0x1000, 0x10},  // right after a: unknown, then a new region
      {kUnreg, a, 0x10},               // relayed
  };
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  ASSERT_EQ(res.verdict, Verdict::kRemoteUnknown);
  ASSERT_EQ(res.index, 1u);

  remote.Replace(hixl_test::HostEntries({{a, 0x1000}, {a + 0x1000, 0x1000}}));
  auto refreshed2 = remote.Snapshot();
  check.SetRemote(*refreshed2);
  res = check.Run(descs, res.index, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  EXPECT_EQ(res.index, descs.size());
  ASSERT_EQ(direct_.size(), 2u);  // contiguous, but in two remote regions
  ExpectPiece(direct_[0], kL1, a + 0xff0, 0x10);
  ExpectPiece(direct_[1], kL1 + 0x10, a + 0x1000, 0x10);
  ASSERT_EQ(relayed_.size(), 1u);
  ExpectPiece(relayed_[0], kUnreg, a, 0x10);
  EXPECT_EQ(Pins(kL1), 1);
}

TEST_F(BatchCheckTest, RunFromMiddleSkipsEarlierDescriptors) {
  auto remote_table23 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table23, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs = {{0, 0, 0}, {kL1, kR1, 0x10}, {kL1 + 0x10, kR1 + 0x10, 0x10}};
  auto res = check.Run(descs, 1, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  EXPECT_EQ(res.index, 3u);
  ASSERT_EQ(direct_.size(), 1u);
  ExpectPiece(direct_[0], kL1, kR1, 0x20);
  res = check.Run(descs, 3, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  EXPECT_EQ(res.index, 3u);
  EXPECT_EQ(direct_.size(), 1u);
}

TEST_F(BatchCheckTest, ForgetRemoteDropsARevokedCachedRegion) {
  RemoteRegions remote;
  const uint64_t a = 0x90000000;
  remote.Replace(hixl_test::HostEntries({{a, 0x1000}}));
  auto remote_table24 = remote.Snapshot();
  BatchCheck check(*table_, *remote_table24, false, /*local_need=*/0);
  std::vector<TransferOpDesc> first = {{kL1, a, 0x10}};
  ASSERT_EQ(check.Run(first, 0, &pins_, &direct_, &relayed_).verdict, Verdict::kOk);

  remote.Revoke(a, 0x1000, 1);
  auto refreshed3 = remote.Snapshot();
  check.SetRemote(*refreshed3);
  std::vector<TransferOpDesc> second = {{kL1 + 0x100, a + 0x100, 0x10}};
  auto res = check.Run(second, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kRemoteUnknown);
  EXPECT_EQ(res.index, 0u);
  EXPECT_EQ(direct_.size(), 1u);
}

TEST_F(BatchCheckTest, ManyDescriptorsInOneRegionBecomeOnePiece) {
  auto remote_table25 = remote_.Snapshot();
  BatchCheck check(*table_, *remote_table25, false, /*local_need=*/0);
  std::vector<TransferOpDesc> descs;
  for (size_t i = 0; i < 4096; ++i) descs.push_back({kL1 + i * 0x10, kR1 + i * 0x10, 0x10});
  auto res = check.Run(descs, 0, &pins_, &direct_, &relayed_);
  EXPECT_EQ(res.verdict, Verdict::kOk);
  ASSERT_EQ(direct_.size(), 1u);
  ExpectPiece(direct_[0], kL1, kR1, 0x10000);
  EXPECT_EQ(Pins(kL1), 1);
}

TEST(BatchCheckAccess, ReadOnlyLocalMemoryCanBeWrittenFromNotReadInto) {
  const size_t len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *p = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  Registry reg(4);
  MemHandle h = nullptr;
  ASSERT_EQ(reg.Register(addr, len, &h), SUCCESS);
  auto table = reg.Snapshot();
  RemoteRegions remote;
  remote.Replace(hixl_test::HostEntries({{kR1, kRemoteLen}}));
  const std::vector<TransferOpDesc> d{{addr, kR1, 64}};
  for (unsigned need : {unsigned{kPageRead}, unsigned{kPageWrite}}) {
    PinSet pins;
    std::vector<Piece> direct, relayed;
    auto snap104 = remote.Snapshot();
    BatchCheck check(*table, *snap104, true, need);
    BatchCheck::Result r = check.Run(d, 0, &pins, &direct, &relayed);
    // A WRITE from it (need read) is fine; a READ into it (need write) is
    // refused, not relayed or moved.
    EXPECT_EQ(r.verdict, need == kPageRead ? Verdict::kOk : Verdict::kLocalNoAccess) << need;
    EXPECT_EQ(direct.size(), need == kPageRead ? 1u : 0u);
    EXPECT_TRUE(relayed.empty());
  }
  munmap(p, len);
}

}  // namespace
}  // namespace hixl
