// registry.h: the memory regions an engine has registered.
//
// Lookups run on every transfer, from caller threads and I/O threads, so they
// read an immutable snapshot (RegionTable) taken under a short lock; changes
// build a new snapshot. A region in use is "pinned"; DeregisterMem revokes the
// region (no new pins succeed) and then waits for the pins to drain.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "hixl/hixl_types.h"
#include "memory/memory_kind.h"
#include "wire/messages.h"

namespace hixl {

class AccessMap;

struct Region {
  uint64_t id = 0;
  uintptr_t addr = 0;
  size_t len = 0;
  const MemoryKind *memory = &HostMemory();
  MemPlacement placement;  // where it lives (set before any table holds it)
  // Set before the region is in any table, constant after: what transports
  // attach to its entry in our region table (a remote key), and what they
  // keep for themselves (a memory handle), by transport wire id.
  wire::Sections sections;
  std::vector<std::pair<uint16_t, std::shared_ptr<void>>> transport_state;
  std::atomic<int64_t> pins{0};
  std::atomic<bool> revoked{false};
  // PageAccess bits that hold for the whole region, plus kAccessKnown once
  // looked up (lazily: see Registry::Allows).
  std::atomic<unsigned> access{0};
  static constexpr unsigned kAccessKnown = 1u << 8;
  // A region not wholly accessible: the access of its parts, and when it
  // was read. map_mu guards them (looked up by whichever thread checks a
  // batch first; `access` above is their summary, read without it).
  Mutex map_mu;
  std::shared_ptr<const AccessMap> map GUARDED_BY(map_mu);
  int64_t map_read_ms GUARDED_BY(map_mu) = 0;

  uintptr_t end() const { return addr + len; }
  bool Contains(uintptr_t a, size_t n) const { return a >= addr && n <= len && a - addr <= len - n; }
};

// An immutable, sorted view of the registered regions.
class RegionTable {
 public:
  explicit RegionTable(std::vector<std::shared_ptr<Region>> regions, uint64_t generation = 0);
  // A region that contains [addr, addr+len), or nullptr. `hint`, when given,
  // is tried first (batches tend to hit one region many times).
  using Ref = const std::shared_ptr<Region> *;
  Ref Find(uintptr_t addr, size_t len, Ref hint = nullptr) const;
  const std::vector<std::shared_ptr<Region>> &regions() const { return regions_; }
  // The registry's generation this table was made at (see Registry::Page).
  uint64_t generation() const { return generation_; }
  // Entries [first, ...) as a page of at most about `max_bytes` (one entry at
  // least, when any is left).
  wire::RegionPage Page(uint32_t first, size_t max_bytes = wire::kMaxRegionPageBytes) const;

 private:
  std::vector<std::shared_ptr<Region>> regions_;  // by addr, then len
  uint64_t generation_ = 0;
  std::vector<uint64_t> max_end_;                  // max end over regions_[0..i]
};

// A set of pinned regions, released on destruction.
class PinSet {
 public:
  PinSet() = default;
  PinSet(PinSet &&) = default;
  PinSet &operator=(PinSet &&other) noexcept;
  PinSet(const PinSet &) = delete;
  PinSet &operator=(const PinSet &) = delete;
  ~PinSet() { Release(); }

  // Pins `r` unless already in the set; false when it has been revoked.
  bool Add(const std::shared_ptr<Region> &r);
  bool Holds(const Region *r) const;
  bool AnyRevoked() const;
  void Release();
  bool empty() const { return pinned_.empty(); }

 private:
  std::vector<std::shared_ptr<Region>> pinned_;
};

class Registry {
 public:
  explicit Registry(size_t max_regions) : max_regions_(max_regions) {}

  // Runs once for a new region, before any table holds it: transports
  // attach their keys (sections, transport_state). Its failure is returned.
  using Prepare = std::function<Status(Region &)>;
  // SUCCESS (same handle for the same (addr, len)), RESOURCE_EXHAUSTED, or
  // what `prepare` returned. Registrations run one at a time.
  Status Register(uintptr_t addr, size_t len, const MemoryKind &memory, const Prepare &prepare, MemHandle *handle)
      EXCLUDES(register_mu_, mu_);
  // Host memory that no transport prepares (tests, benchmarks).
  Status Register(uintptr_t addr, size_t len, MemHandle *handle) {
    return Register(addr, len, HostMemory(), nullptr, handle);
  }
  // Revokes the region and waits until nothing has it pinned. Users that
  // stall while holding a revoked region abort themselves (see TargetStream).
  // Unknown handles are ignored.
  void Deregister(MemHandle handle) EXCLUDES(mu_);
  // The two halves of Deregister: take the region out of every lookup and
  // refuse new pins (nullptr for an unknown handle); wait for the pins.
  std::shared_ptr<Region> Revoke(MemHandle handle) EXCLUDES(mu_);
  void WaitUnpinned(const Region &r);

  std::shared_ptr<const RegionTable> Snapshot() const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);

  // Whether this process may read (need = kPageRead) or write (kPageWrite)
  // [addr, addr+len) of region `r`, which contains it. The region's map is
  // read at its first use and kept: protections must not be taken away
  // while memory is registered. A refusal reads the map again if the one
  // kept is 100 ms old or more, so memory made accessible later (a
  // reservation committed piecemeal, say) becomes usable.
  static bool Allows(Region &r, uintptr_t addr, size_t len, unsigned need) {
    // Inline: runs per descriptor, and nearly always the whole region may.
    return (r.access.load(std::memory_order_relaxed) & need) == need || r.memory->AllowsPart(r, addr, len, need);
  }
  static constexpr int64_t kMapRereadMs = 100;

  // Called by PinSet when a revoked region loses a pin.
  static void NotifyUnpinned();

 private:
  void Rebuild() const REQUIRES(mu_);  // only when dirty_

  const size_t max_regions_;
  // Held for a whole Register, Prepare included (which may be slow: a
  // transport pinning memory), so that one range is prepared once; lookups
  // take only mu_ meanwhile. Guards no data of its own.
  Mutex register_mu_ ACQUIRED_BEFORE(mu_);
  // Guards the tables; held briefly (a lookup takes the snapshot).
  mutable Mutex mu_;
  uint64_t generation_ GUARDED_BY(mu_) = 0;  // one more for every change
  std::map<uint64_t, std::shared_ptr<Region>> by_id_ GUARDED_BY(mu_);
  std::map<std::pair<uintptr_t, size_t>, uint64_t> by_range_ GUARDED_BY(mu_);
  // Rebuilt lazily, at the first Snapshot after a change, so that registering
  // many regions in a row costs O(n log n) in all rather than per region.
  mutable bool dirty_ GUARDED_BY(mu_) = false;
  mutable std::shared_ptr<const RegionTable> table_ GUARDED_BY(mu_) =
      std::make_shared<RegionTable>(std::vector<std::shared_ptr<Region>>());
};

}  // namespace hixl
