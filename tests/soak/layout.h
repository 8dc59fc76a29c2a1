// layout.h: where targets keep the memory initiators write and check, so
// that both know it without asking (the API has no way to ask).
//
// Target t registers kRegions regions at fixed addresses. A region is a
// header page (the target's epoch, a random u64 new in every life of the
// process, then a fixed pattern) and slots. Each slot belongs to one owner:
// a worker thread of one initiator in lives of one parity (a restarted
// initiator uses the other set, so bytes a killed life left on the wire
// never land in slots the new life checks). The last kGuard bytes of every
// slot are never written by anyone; the target checks them, and the header.
// Odd regions live in sealed memfds, which initiators over shm map.
#pragma once

#include <cstddef>
#include <cstdint>

namespace soak {

constexpr int kMaxTargets = 8;
constexpr int kMaxInitiators = 8;
constexpr int kWorkers = 2;          // transfer threads per initiator
constexpr int kRegions = 4;          // per target
constexpr int kSlotsPerOwner = 2;    // per region
constexpr size_t kSlot = 128u << 10;
constexpr size_t kGuard = 64;
constexpr size_t kHeader = 4096;
constexpr int kOwners = kMaxInitiators * 2 * kWorkers;
constexpr size_t kRegionLen = kHeader + size_t{kOwners} * kSlotsPerOwner * kSlot;
// Seeds of the fixed patterns (header, guards).
constexpr uint64_t kHeaderSeed = 0x4845414445520001ull;
constexpr uint64_t kGuardSeed = 0x4755415244000001ull;

// Far below where the kernel puts mappings (they grow down from near
// 0x7fff00000000), and inside what ASan and TSan let an application map
// (TSan: 0x7e8000000000 and up).
inline uintptr_t RegionAddr(int target, int region) {
  return 0x7e9000000000ull + (uintptr_t(target) << 32) + (uintptr_t(region) << 28);
}
inline int Owner(int initiator, int incarnation, int worker) {
  return (initiator * 2 + incarnation % 2) * kWorkers + worker;
}
inline size_t SlotOffset(int owner, int slot) { return kHeader + (size_t(owner) * kSlotsPerOwner + slot) * kSlot; }
// The largest write into a slot: its guard stays untouched.
constexpr size_t kSlotData = kSlot - kGuard;

}  // namespace soak
