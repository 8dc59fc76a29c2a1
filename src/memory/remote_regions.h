// remote_regions.h: an initiator's copy of a target's region table.
//
// Over TCP the copy only lets the initiator refuse a bad batch before any of
// it is sent: the target checks again (it revokes regions here too, and
// waits a short while for the acknowledgement, so that a batch started after
// its DeregisterMem returned is refused whole). Over a transport that reaches
// the target's memory without it (shm) it is the only check, so it must never
// hold a region the target has deregistered: the target revokes regions here
// (and waits for the acknowledgement) before DeregisterMem returns. Copies
// into the target run under Hold(), which keeps the checked ranges from being
// revoked until the copy is done.
//
// The table is an immutable snapshot, replaced whole: a batch keeps the
// snapshot it was checked against, and its pieces point at the entries they
// use (a transport that needs a remote key finds it there, without a search).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "wire/messages.h"

namespace hixl {

// One region of the target's table, constant once made.
struct RemoteRegion {
  wire::RegionInfo range;
  wire::MemKind kind = wire::MemKind::kHost;
  wire::Sections sections;  // what the target's transports attached (keys)

  uint64_t end() const { return range.addr + range.len; }
  bool Contains(uint64_t a, uint64_t n) const {
    return a >= range.addr && n <= range.len && a - range.addr <= range.len - n;
  }
};

// A sorted, immutable table of remote regions.
class RemoteTable {
 public:
  RemoteTable() = default;
  // `sorted`: the regions are in order already (by addr, then len).
  explicit RemoteTable(std::vector<std::shared_ptr<const RemoteRegion>> regions, bool sorted = false);
  // A region containing [addr, addr+len), or nullptr.
  const RemoteRegion *Find(uint64_t addr, uint64_t len) const;
  // The same, shared: for a cache keyed by the entry, which must keep it
  // alive (a new entry at the same address may say something else).
  std::shared_ptr<const RemoteRegion> FindShared(uint64_t addr, uint64_t len) const;

 private:
  // Read through RemoteRegions only: a caller walking the list of a
  // snapshot it does not hold (a range-for over Snapshot()->regions(), whose
  // snapshot is a temporary) reads freed memory once a REVOKE replaces the
  // table; that happened twice.
  friend class RemoteRegions;
  const std::vector<std::shared_ptr<const RemoteRegion>> &regions() const { return regions_; }
  size_t IndexOf(uint64_t addr, uint64_t len) const;  // SIZE_MAX: none

  std::vector<std::shared_ptr<const RemoteRegion>> regions_;  // by addr, then len
  std::vector<uint64_t> max_end_;                              // max end over regions_[0..i]
};

class RemoteRegions {
 public:
  RemoteRegions();
  // Tables and revocations arrive on the link's control stream; `order` is
  // the frame's place in it (0: the handshake's). Several threads read a
  // stream, and each applies what it read after letting go of the stream, so
  // they may apply out of order: a table is applied without the regions
  // revoked after it, and not at all if a later table was applied already.
  // Entries equal to ones in place are kept as they are (the same objects).
  void Replace(std::vector<wire::RegionEntry> entries, uint64_t order = 0) EXCLUDES(mu_);
  // Removes the region (addr, len) exactly; waits for Holds using it. Not
  // when the table in place was sent after the revocation.
  void Revoke(uint64_t addr, uint64_t len, uint64_t order) EXCLUDES(mu_);
  bool Contains(uint64_t addr, uint64_t len) const EXCLUDES(mu_);
  // The table in place now.
  std::shared_ptr<const RemoteTable> Snapshot() const EXCLUDES(mu_);
  // The entries in place now, by address (a copy: safe to walk while
  // revocations replace the table).
  std::vector<std::shared_ptr<const RemoteRegion>> Regions() const EXCLUDES(mu_);
  // The entry `entry` points at, kept alive, if it is in the table in place
  // now; nullptr if it was revoked or replaced since the caller's snapshot.
  std::shared_ptr<const RemoteRegion> Live(const RemoteRegion *entry) const EXCLUDES(mu_);
  // Returns once no Hold taken before the call is alive: a copy that checks,
  // under its Hold, a flag set before this call sees it.
  void WaitForHolds() EXCLUDES(mu_);

  // While alive, no Replace/Revoke can happen: ranges checked with
  // Contains stay valid. (A shared hold of the table's lock.)
  class SCOPED_CAPABILITY Hold {
   public:
    explicit Hold(const RemoteRegions &r) ACQUIRE_SHARED(r.mu_) : lock_(&r.mu_), table_(r.table_.get()) {}
    ~Hold() RELEASE() {}
    Hold(const Hold &) = delete;
    Hold &operator=(const Hold &) = delete;
    bool Contains(uint64_t addr, uint64_t len) const { return table_->Find(addr, len) != nullptr; }
    const RemoteRegion *Find(uint64_t addr, uint64_t len) const { return table_->Find(addr, len); }
    std::shared_ptr<const RemoteRegion> FindShared(uint64_t addr, uint64_t len) const {
      return table_->FindShared(addr, len);
    }

   private:
    ReaderLock lock_;
    const RemoteTable *table_;  // r.table_ as it stays while lock_ is held
  };

 private:
  // Revocations kept for a table that arrived before them but is applied
  // after them; the newest only: the race is between two threads that each
  // just read a frame.
  static constexpr size_t kMaxTombstones = 4096;

  // Guards the table: shared by lookups and by copies under a Hold (a
  // syscall's worth each), exclusive to replace it.
  mutable SharedMutex mu_;
  std::shared_ptr<const RemoteTable> table_ GUARDED_BY(mu_);  // never null
  uint64_t table_order_ GUARDED_BY(mu_) = 0;                  // of the table applied last
  // (order, region), newer than table_order_, by arrival.
  std::deque<std::pair<uint64_t, wire::RegionInfo>> tombstones_ GUARDED_BY(mu_);
};

}  // namespace hixl
