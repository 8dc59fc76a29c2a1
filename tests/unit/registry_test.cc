// Unit tests for hixl::Registry, RegionTable and PinSet (src/memory/registry.h).
// The registry never dereferences addresses, so fake ones are used throughout.
#include "memory/registry.h"
#include "wire/frame.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/options.h"
#include "wire/messages.h"

namespace hixl {
namespace {

// The registered ranges, by address, as a peer would see them.
std::vector<wire::RegionInfo> Ranges(const Registry &reg) {
  std::vector<wire::RegionInfo> out;
  for (const auto &e : reg.Snapshot()->Page(0, SIZE_MAX).entries) out.push_back(e.range);
  return out;
}


using Clock = std::chrono::steady_clock;

std::shared_ptr<Region> MakeRegion(uint64_t id, uintptr_t addr, size_t len) {
  auto r = std::make_shared<Region>();
  r->id = id;
  r->addr = addr;
  r->len = len;
  return r;
}

// The id of the region Find returns, or 0 for none.
uint64_t FoundId(const RegionTable &t, uintptr_t addr, size_t len, RegionTable::Ref hint = nullptr) {
  RegionTable::Ref r = t.Find(addr, len, hint);
  return r == nullptr ? 0 : (*r)->id;
}

RegionTable::Ref RefOf(const RegionTable &t, uint64_t id) {
  for (const auto &r : t.regions()) {
    if (r->id == id) return &r;
  }
  return nullptr;
}

MemHandle MustRegister(Registry &reg, uintptr_t addr, size_t len) {
  MemHandle h = nullptr;
  EXPECT_EQ(reg.Register(addr, len, &h), SUCCESS) << std::hex << addr << "+" << len;
  EXPECT_NE(h, nullptr);
  return h;
}

// ---------------------------------------------------------------- RegionTable::Find

TEST(RegionTableTest, EmptyTableFindsNothing) {
  RegionTable t({});
  EXPECT_EQ(t.Find(0x1000, 1), nullptr);
  EXPECT_EQ(t.Find(0, 1), nullptr);
}

TEST(RegionTableTest, EdgesOfOneRegion) {
  RegionTable t({MakeRegion(1, 0x10000, 0x1000)});
  EXPECT_EQ(FoundId(t, 0x10000, 1), 1u);           // first byte
  EXPECT_EQ(FoundId(t, 0x10FFF, 1), 1u);           // last byte
  EXPECT_EQ(FoundId(t, 0x10000, 0x1000), 1u);      // the whole region
  EXPECT_EQ(FoundId(t, 0x10800, 0x800), 1u);       // a tail ending at the end
  EXPECT_EQ(FoundId(t, 0x11000, 1), 0u);           // one past the end
  EXPECT_EQ(FoundId(t, 0xFFFF, 1), 0u);            // one before the start
  EXPECT_EQ(FoundId(t, 0xFFFF, 2), 0u);            // straddles the start
  EXPECT_EQ(FoundId(t, 0x10FFF, 2), 0u);           // straddles the end
  EXPECT_EQ(FoundId(t, 0x10000, 0x1001), 0u);      // one byte too long
  EXPECT_EQ(FoundId(t, 0x10000, 0), 0u);           // empty range
  EXPECT_EQ(FoundId(t, 0x10800, 0), 0u);
  EXPECT_EQ(FoundId(t, 0x10800, SIZE_MAX), 0u);    // addr + len overflows
  EXPECT_EQ(FoundId(t, UINTPTR_MAX, 2), 0u);
  EXPECT_EQ(FoundId(t, UINTPTR_MAX - 4, 16), 0u);
  EXPECT_EQ(FoundId(t, 0, 1), 0u);
}

TEST(RegionTableTest, SortsItsInput) {
  RegionTable t({MakeRegion(3, 0x30000, 0x100), MakeRegion(1, 0x10000, 0x100), MakeRegion(2, 0x20000, 0x100)});
  ASSERT_EQ(t.regions().size(), 3u);
  EXPECT_EQ(t.regions()[0]->addr, 0x10000u);
  EXPECT_EQ(t.regions()[1]->addr, 0x20000u);
  EXPECT_EQ(t.regions()[2]->addr, 0x30000u);
  EXPECT_EQ(FoundId(t, 0x10010, 0x10), 1u);
  EXPECT_EQ(FoundId(t, 0x20010, 0x10), 2u);
  EXPECT_EQ(FoundId(t, 0x30010, 0x10), 3u);
  EXPECT_EQ(FoundId(t, 0x18000, 0x10), 0u);  // in a gap
  EXPECT_EQ(FoundId(t, 0x40000, 0x10), 0u);  // past the last
}

TEST(RegionTableTest, AdjacentRegionsDoNotJoin) {
  RegionTable t({MakeRegion(1, 0x1000, 0x1000), MakeRegion(2, 0x2000, 0x1000)});
  EXPECT_EQ(FoundId(t, 0x1FFF, 1), 1u);
  EXPECT_EQ(FoundId(t, 0x2000, 1), 2u);
  EXPECT_EQ(FoundId(t, 0x1000, 0x1000), 1u);
  EXPECT_EQ(FoundId(t, 0x2000, 0x1000), 2u);
  // A range across the seam is in neither region.
  EXPECT_EQ(FoundId(t, 0x1FFF, 2), 0u);
  EXPECT_EQ(FoundId(t, 0x1800, 0x1000), 0u);
  EXPECT_EQ(FoundId(t, 0x1000, 0x2000), 0u);
}

TEST(RegionTableTest, OverlappingRegions) {
  // A = [0x1000, 0x3000), B = [0x2000, 0x5000)
  RegionTable t({MakeRegion(1, 0x1000, 0x2000), MakeRegion(2, 0x2000, 0x3000)});
  EXPECT_EQ(FoundId(t, 0x1000, 0x800), 1u);   // only in A
  EXPECT_EQ(FoundId(t, 0x3000, 0x800), 2u);   // only in B
  EXPECT_EQ(FoundId(t, 0x2800, 0x1000), 2u);  // starts in both, ends in B only
  EXPECT_EQ(FoundId(t, 0x1800, 0x1000), 1u);  // ends at A's end
  uint64_t both = FoundId(t, 0x2400, 0x100);  // in both: either will do
  EXPECT_TRUE(both == 1u || both == 2u) << both;
  EXPECT_EQ(FoundId(t, 0x1000, 0x4000), 0u);  // spans the union, in neither
  EXPECT_EQ(FoundId(t, 0x2FFF, 0x2002), 0u);  // past B's end
}

TEST(RegionTableTest, NestedRegionsFindOuterPastInner) {
  // Outer [0x1000, 0x100000) holds 100 small regions; ranges between or across
  // them are only in the outer region, whose start is far behind.
  std::vector<std::shared_ptr<Region>> v;
  v.push_back(MakeRegion(1, 0x1000, 0xFF000));
  for (uint64_t i = 0; i < 100; ++i) v.push_back(MakeRegion(100 + i, 0x2000 + i * 0x100, 0x10));
  RegionTable t(std::move(v));
  EXPECT_EQ(FoundId(t, 0x90000, 0x10), 1u);      // after every inner region
  EXPECT_EQ(FoundId(t, 0x2008, 0x10), 1u);       // straddles inner #0's end
  EXPECT_EQ(FoundId(t, 0x2050, 0x10), 1u);       // between inner #0 and #1
  EXPECT_EQ(FoundId(t, 0x1000, 0xFF000), 1u);    // the outer region exactly
  EXPECT_EQ(FoundId(t, 0xFFFF0, 0x20), 0u);      // past the outer end
  uint64_t inner = FoundId(t, 0x2000 + 5 * 0x100, 0x10);
  EXPECT_TRUE(inner == 1u || inner == 105u) << inner;
}

TEST(RegionTableTest, HintFastPath) {
  RegionTable t({MakeRegion(1, 0x1000, 0x2000), MakeRegion(2, 0x2000, 0x3000), MakeRegion(3, 0x9000, 0x1000)});
  RegionTable::Ref a = RefOf(t, 1);
  RegionTable::Ref b = RefOf(t, 2);
  RegionTable::Ref c = RefOf(t, 3);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  // A hint that contains the range is returned as is (the same Ref).
  EXPECT_EQ(t.Find(0x2400, 0x100, a), a);
  EXPECT_EQ(t.Find(0x2400, 0x100, b), b);
  // A hint that does not contain it falls back to the search.
  EXPECT_EQ(FoundId(t, 0x9100, 0x10, a), 3u);
  EXPECT_EQ(FoundId(t, 0x3000, 0x100, a), 2u);
  EXPECT_EQ(t.Find(0x6000, 0x10, c), nullptr);
  // Hints do not widen a region.
  EXPECT_EQ(t.Find(0x2FFF, 2, a), RefOf(t, 2));
  EXPECT_EQ(t.Find(0x9FFF, 2, c), nullptr);
  EXPECT_EQ(t.Find(UINTPTR_MAX, 2, c), nullptr);
}

// Find's answer for an empty range does not depend on the hint: never found.
TEST(RegionTableTest, EmptyRangeNotFoundWithHintEither) {
  RegionTable t({MakeRegion(1, 0x1000, 0x1000)});
  RegionTable::Ref a = RefOf(t, 1);
  ASSERT_EQ(t.Find(0x1800, 0), nullptr);
  EXPECT_EQ(t.Find(0x1800, 0, a), nullptr);
  EXPECT_EQ(t.Find(0x2000, 0, a), nullptr);  // one past the end
}

// ---------------------------------------------------------------- Registry

TEST(RegistryTest, HandlesAreUniqueAcrossRegistries) {
  // A handle of one engine (or one left over from before a Finalize) must
  // never deregister another engine's region.
  Registry a(4), b(4);
  MemHandle ha = nullptr, hb = nullptr;
  ASSERT_EQ(a.Register(0x10000, 0x1000, &ha), SUCCESS);
  ASSERT_EQ(b.Register(0x20000, 0x1000, &hb), SUCCESS);
  EXPECT_NE(ha, hb);
  EXPECT_EQ(b.Revoke(ha), nullptr);  // not b's
  EXPECT_EQ(b.size(), 1u);
  a.Deregister(ha);
  Registry c(4);  // a fresh engine does not hand out a's old handle again
  MemHandle hc = nullptr;
  ASSERT_EQ(c.Register(0x10000, 0x1000, &hc), SUCCESS);
  EXPECT_NE(hc, ha);
}

TEST(RegistryTest, SameRangeTwiceGivesSameHandle) {
  Registry reg(256);
  MemHandle h1 = MustRegister(reg, 0x10000, 0x1000);
  MemHandle h2 = MustRegister(reg, 0x10000, 0x1000);
  EXPECT_EQ(h1, h2);
  EXPECT_EQ(reg.size(), 1u);
  // Same start, other length: a different region.
  MemHandle h3 = MustRegister(reg, 0x10000, 0x800);
  EXPECT_NE(h3, h1);
  // Same length, other start: a different region.
  MemHandle h4 = MustRegister(reg, 0x10800, 0x1000);
  EXPECT_NE(h4, h1);
  EXPECT_NE(h4, h3);
  EXPECT_EQ(reg.size(), 3u);
  EXPECT_EQ(Ranges(reg).size(), 3u);
}

TEST(RegistryTest, HandlesAreDistinctAndNonNull) {
  Registry reg(1024);
  std::set<MemHandle> handles;
  for (uintptr_t i = 0; i < 300; ++i) handles.insert(MustRegister(reg, 0x100000 + i * 0x1000, 0x1000));
  EXPECT_EQ(handles.size(), 300u);
  EXPECT_EQ(handles.count(nullptr), 0u);
}

TEST(RegistryTest, ResourceExhaustedPastCap) {
  Registry reg(256);
  std::vector<MemHandle> handles;
  for (uintptr_t i = 0; i < 256; ++i) handles.push_back(MustRegister(reg, 0x10000 + i * 0x100, 0x100));
  EXPECT_EQ(reg.size(), 256u);
  MemHandle h = nullptr;
  EXPECT_EQ(reg.Register(0x10000 + 256 * 0x100, 0x100, &h), RESOURCE_EXHAUSTED);
  EXPECT_EQ(reg.size(), 256u);
  // Re-registering an existing range at the cap is still SUCCESS, same handle.
  MemHandle again = nullptr;
  EXPECT_EQ(reg.Register(0x10000, 0x100, &again), SUCCESS);
  EXPECT_EQ(again, handles[0]);
  // Freeing one makes room for one.
  reg.Deregister(handles[7]);
  EXPECT_EQ(reg.Register(0x10000 + 256 * 0x100, 0x100, &h), SUCCESS);
  EXPECT_EQ(reg.Register(0x10000 + 257 * 0x100, 0x100, &h), RESOURCE_EXHAUSTED);
}

TEST(RegistryTest, DeregisterUnknownHandleIsNoOp) {
  Registry reg(256);
  MemHandle h = MustRegister(reg, 0x10000, 0x1000);
  reg.Deregister(reinterpret_cast<MemHandle>(static_cast<uintptr_t>(0xDEAD)));
  reg.Deregister(nullptr);
  EXPECT_EQ(reg.size(), 1u);
  ASSERT_EQ(Ranges(reg).size(), 1u);
  // Twice: the second is a no-op.
  reg.Deregister(h);
  reg.Deregister(h);
  EXPECT_EQ(reg.size(), 0u);
}

TEST(RegistryTest, DeregisteredRegionLeavesSnapshotAndExport) {
  Registry reg(256);
  MemHandle a = MustRegister(reg, 0x10000, 0x1000);
  MemHandle b = MustRegister(reg, 0x20000, 0x2000);
  auto before = reg.Snapshot();
  ASSERT_EQ(before->regions().size(), 2u);
  ASSERT_NE(before->Find(0x10000, 0x10), nullptr);

  reg.Deregister(a);
  auto after = reg.Snapshot();
  EXPECT_EQ(after->regions().size(), 1u);
  EXPECT_EQ(after->Find(0x10000, 0x10), nullptr);
  EXPECT_NE(after->Find(0x20000, 0x10), nullptr);
  auto exported = Ranges(reg);
  ASSERT_EQ(exported.size(), 1u);
  EXPECT_EQ(exported[0].addr, 0x20000u);
  EXPECT_EQ(exported[0].len, 0x2000u);

  // The old snapshot is immutable; the region in it is marked revoked.
  RegionTable::Ref old = before->Find(0x10000, 0x10);
  ASSERT_NE(old, nullptr);
  EXPECT_TRUE((*old)->revoked.load());
  EXPECT_FALSE((*before->Find(0x20000, 0x10))->revoked.load());

  // Registering the range again gives a fresh region.
  MemHandle a2 = MustRegister(reg, 0x10000, 0x1000);
  EXPECT_NE(a2, b);
  EXPECT_NE(reg.Snapshot()->Find(0x10000, 0x10), nullptr);
  reg.Deregister(b);
  reg.Deregister(a2);
  EXPECT_TRUE(Ranges(reg).empty());
  EXPECT_TRUE(reg.Snapshot()->regions().empty());
}

TEST(RegistryTest, SnapshotReflectsNewRegistrations) {
  Registry reg(256);
  auto empty = reg.Snapshot();
  EXPECT_TRUE(empty->regions().empty());
  MustRegister(reg, 0x10000, 0x1000);
  auto one = reg.Snapshot();
  EXPECT_EQ(one->regions().size(), 1u);
  EXPECT_TRUE(empty->regions().empty());  // old snapshots never change
  // No change: the same table comes back.
  EXPECT_EQ(reg.Snapshot().get(), one.get());
}

TEST(RegistryTest, ExportIsSortedByAddress) {
  Registry reg(256);
  MustRegister(reg, 0x30000, 0x10);
  MustRegister(reg, 0x10000, 0x20);
  MustRegister(reg, 0x20000, 0x30);
  auto e = Ranges(reg);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].addr, 0x10000u);
  EXPECT_EQ(e[0].len, 0x20u);
  EXPECT_EQ(e[1].addr, 0x20000u);
  EXPECT_EQ(e[2].addr, 0x30000u);
}

TEST(RegistryTest, ThousandRegionsThenOneSnapshotIsFast) {
  Registry reg(65536);
  auto t0 = Clock::now();
  for (uintptr_t i = 0; i < 1000; ++i) MustRegister(reg, 0x1000000 + i * 0x10000, 0x8000);
  auto table = reg.Snapshot();
  auto elapsed = Clock::now() - t0;
  EXPECT_LT(elapsed, std::chrono::seconds(1));
  ASSERT_EQ(table->regions().size(), 1000u);
  // And the table answers correctly.
  EXPECT_NE(table->Find(0x1000000 + 999 * 0x10000 + 0x7FFF, 1), nullptr);
  EXPECT_EQ(table->Find(0x1000000 + 999 * 0x10000 + 0x8000, 1), nullptr);
  EXPECT_EQ(table->Find(0x1000000 + 500 * 0x10000 + 0x7FF0, 0x20), nullptr);
}

TEST(RegistryTest, OneTebibyteRegionRegistersInstantly) {
  Registry reg(256);
  const uintptr_t base = 0x100000000000ull;  // fake, never touched
  const size_t tib = size_t{1} << 40;
  auto t0 = Clock::now();
  MemHandle h = MustRegister(reg, base, tib);
  auto table = reg.Snapshot();
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_NE(table->Find(base, tib), nullptr);
  EXPECT_NE(table->Find(base + tib - 1, 1), nullptr);
  EXPECT_EQ(table->Find(base + tib, 1), nullptr);
  reg.Deregister(h);
  EXPECT_EQ(reg.size(), 0u);
}

// Every page of the table from `reg`, as it goes on the wire, decoded.
std::vector<wire::RegionPage> PagesOnTheWire(const Registry &reg) {
  std::vector<wire::RegionPage> pages;
  auto table = reg.Snapshot();
  for (uint32_t first = 0; pages.empty() || first < pages.back().total;) {
    std::vector<uint8_t> body;
    wire::EncodeRegionPage(table->Page(first), &body);
    EXPECT_LE(body.size(), wire::kMaxBody);
    wire::RegionPage page;
    EXPECT_TRUE(wire::DecodeRegionPage(body.data(), body.size(), &page));
    if (page.count == 0) break;
    first += page.count;
    pages.push_back(std::move(page));
  }
  return pages;
}

// The largest region cap GlobalResourceConfig allows still fits the region
// table every peer must decode (HELLO_ACK at connect, REGIONS_RESP later).
TEST(RegistryTest, LargestRegionCapFitsTheWire) {
  EngineOptions opts;
  std::string why;
  EXPECT_EQ(ParseEngineOptions({{OPTION_GLOBAL_RESOURCE_CONFIG, "{\"max_regions\": 65537}"}}, &opts, &why),
            PARAM_INVALID);
  ASSERT_EQ(ParseEngineOptions({{OPTION_GLOBAL_RESOURCE_CONFIG, "{\"max_regions\": 65536}"}}, &opts, &why), SUCCESS)
      << why;
  Registry reg(opts.max_regions);
  for (uintptr_t i = 0; i < 65536; ++i) MustRegister(reg, 0x1000000 + i * 0x100, 0x100);
  hixl::MemHandle h = nullptr;
  EXPECT_EQ(reg.Register(0x100, 0x10, &h), RESOURCE_EXHAUSTED);
  size_t entries = 0;
  const auto pages = PagesOnTheWire(reg);
  for (const auto &p : pages) entries += p.entries.size();
  EXPECT_EQ(entries, 65536u);
  EXPECT_GE(pages.size(), 2u);  // more than a page holds
}

// With a transport's key on every region (a UCX remote key is some 100 to 300
// bytes), a full table is many MiB: it goes in pages, each well within what
// a frame may carry, of one generation.
TEST(RegistryTest, ATableOfBigEntriesGoesInPages) {
  Registry reg(65536);
  for (uintptr_t i = 0; i < 65536; ++i) {
    MemHandle h = nullptr;
    ASSERT_EQ(reg.Register(0x1000000 + i * 0x100, 0x100, HostMemory(),
                           [i](Region &r) {
                             r.sections.push_back({7, std::vector<uint8_t>(256, static_cast<uint8_t>(i))});
                             return SUCCESS;
                           },
                           &h),
              SUCCESS);
  }
  const auto pages = PagesOnTheWire(reg);
  size_t entries = 0;
  for (const auto &p : pages) {
    entries += p.entries.size();
    EXPECT_EQ(p.generation, pages[0].generation);
    for (const auto &e : p.entries) {
      const auto *key = wire::FindSection(e.sections, 7);
      ASSERT_NE(key, nullptr);
      EXPECT_EQ(key->size(), 256u);
      EXPECT_EQ((*key)[0], static_cast<uint8_t>((e.range.addr - 0x1000000) / 0x100));
    }
  }
  EXPECT_EQ(entries, 65536u);
  EXPECT_GE(pages.size(), 16u);  // 65536 x ~290 bytes: some 18 MiB
}

TEST(RegistryTest, EveryChangeMakesANewGeneration) {
  Registry reg(256);
  const uint64_t g0 = reg.Snapshot()->generation();
  MemHandle h = MustRegister(reg, 0x10000, 0x1000);
  const uint64_t g1 = reg.Snapshot()->generation();
  EXPECT_NE(g1, g0);
  MustRegister(reg, 0x10000, 0x1000);  // the same region again: no change
  EXPECT_EQ(reg.Snapshot()->generation(), g1);
  reg.Deregister(h);
  EXPECT_NE(reg.Snapshot()->generation(), g1);
}

// ---------------------------------------------------------------- PinSet

TEST(PinSetTest, AddHoldsAndReleases) {
  Registry reg(256);
  MustRegister(reg, 0x10000, 0x1000);
  MustRegister(reg, 0x20000, 0x1000);
  auto t = reg.Snapshot();
  const auto &a = *t->Find(0x10000, 1);
  const auto &b = *t->Find(0x20000, 1);
  {
    PinSet pins;
    EXPECT_TRUE(pins.empty());
    EXPECT_TRUE(pins.Add(a));
    EXPECT_TRUE(pins.Add(a));  // already held: no second pin
    EXPECT_EQ(a->pins.load(), 1);
    EXPECT_TRUE(pins.Add(b));
    EXPECT_EQ(b->pins.load(), 1);
    EXPECT_TRUE(pins.Holds(a.get()));
    EXPECT_TRUE(pins.Holds(b.get()));
    EXPECT_FALSE(pins.empty());
    EXPECT_FALSE(pins.AnyRevoked());

    PinSet other;
    EXPECT_TRUE(other.Add(a));
    EXPECT_EQ(a->pins.load(), 2);
    other.Release();
    EXPECT_EQ(a->pins.load(), 1);
    EXPECT_TRUE(other.empty());
    EXPECT_FALSE(other.Holds(a.get()));
  }  // destructor releases
  EXPECT_EQ(a->pins.load(), 0);
  EXPECT_EQ(b->pins.load(), 0);
}

TEST(PinSetTest, MoveTransfersPins) {
  Registry reg(256);
  MustRegister(reg, 0x10000, 0x1000);
  MustRegister(reg, 0x20000, 0x1000);
  auto t = reg.Snapshot();
  const auto &a = *t->Find(0x10000, 1);
  const auto &b = *t->Find(0x20000, 1);
  PinSet p1;
  ASSERT_TRUE(p1.Add(a));
  PinSet p2(std::move(p1));
  EXPECT_EQ(a->pins.load(), 1);
  EXPECT_TRUE(p2.Holds(a.get()));
  PinSet p3;
  ASSERT_TRUE(p3.Add(b));
  p3 = std::move(p2);  // releases b, takes a
  EXPECT_EQ(b->pins.load(), 0);
  EXPECT_EQ(a->pins.load(), 1);
  EXPECT_TRUE(p3.Holds(a.get()));
  p3.Release();
  EXPECT_EQ(a->pins.load(), 0);
}

TEST(PinSetTest, AddFailsOnRevokedRegion) {
  Registry reg(256);
  MemHandle h = MustRegister(reg, 0x10000, 0x1000);
  auto t = reg.Snapshot();
  std::shared_ptr<Region> r = *t->Find(0x10000, 1);
  reg.Deregister(h);  // nothing pinned: returns at once
  PinSet pins;
  EXPECT_FALSE(pins.Add(r));
  EXPECT_TRUE(pins.empty());
  EXPECT_FALSE(pins.Holds(r.get()));
  EXPECT_EQ(r->pins.load(), 0);
}

TEST(PinSetTest, AnyRevokedSeesDeregistrationWhileHeld) {
  Registry reg(256);
  MemHandle h = MustRegister(reg, 0x10000, 0x1000);
  auto t = reg.Snapshot();
  std::shared_ptr<Region> r = *t->Find(0x10000, 1);
  PinSet pins;
  ASSERT_TRUE(pins.Add(r));
  std::thread dereg([&] { reg.Deregister(h); });
  // Deregister revokes first, then waits: AnyRevoked turns true while we hold it.
  auto until = Clock::now() + std::chrono::seconds(5);
  while (!pins.AnyRevoked() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(pins.AnyRevoked());
  pins.Release();
  dereg.join();
  EXPECT_EQ(r->pins.load(), 0);
}

TEST(PinSetTest, DeregisterWaitsForPinsToDrain) {
  Registry reg(256);
  MemHandle h = MustRegister(reg, 0x10000, 0x1000);
  auto t = reg.Snapshot();
  std::shared_ptr<Region> r = *t->Find(0x10000, 1);
  PinSet pins;
  ASSERT_TRUE(pins.Add(r));

  bool late_add = true;
  auto t0 = Clock::now();
  std::thread releaser([&] {
    // Once Deregister has revoked the region, new pins are refused.
    auto until = Clock::now() + std::chrono::seconds(5);
    while (!r->revoked.load() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    {
      PinSet late;
      late_add = late.Add(r);
    }
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(100));
    pins.Release();
  });
  reg.Deregister(h);
  auto waited = Clock::now() - t0;
  releaser.join();
  EXPECT_GE(waited, std::chrono::milliseconds(100));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_FALSE(late_add);
  EXPECT_EQ(r->pins.load(), 0);
  EXPECT_TRUE(r->revoked.load());
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_EQ(reg.Snapshot()->Find(0x10000, 1), nullptr);
}

}  // namespace
}  // namespace hixl
