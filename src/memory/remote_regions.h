// remote_regions.h: an initiator's copy of a target's region table.
//
// Over TCP the copy only lets the initiator refuse a bad batch before any of
// it is sent: the target checks again (it revokes regions here too, and
// waits a short while for the acknowledgement, so that a batch started after
// its DeregisterMem returned is refused whole). Over shm it is the only
// check, so it must never hold a region the target has deregistered: the
// target revokes regions here (and waits for the acknowledgement) before
// DeregisterMem returns. Copies into the target run under Hold(), which keeps the checked
// ranges from being revoked until the copy is done.
#pragma once

#include <cstdint>
#include <cstddef>
#include <deque>
#include <utility>
#include <shared_mutex>
#include <vector>

#include "wire/messages.h"

namespace hixl {

class RemoteRegions {
 public:
  // Tables and revocations arrive on the link's control stream; `order` is
  // the frame's place in it (0: the handshake's). Several threads read a
  // stream, and each applies what it read after letting go of the stream, so
  // they may apply out of order: a table is applied without the regions
  // revoked after it, and not at all if a later table was applied already.
  void Replace(std::vector<wire::RegionInfo> regions, uint64_t order = 0);
  // Removes the region (addr, len) exactly; waits for Holds using it. Not
  // when the table in place was sent after the revocation.
  void Revoke(uint64_t addr, uint64_t len, uint64_t order);
  bool Contains(uint64_t addr, uint64_t len) const;
  // Returns once no Hold taken before the call is alive: a copy that checks,
  // under its Hold, a flag set before this call sees it.
  void WaitForHolds();
  // Like Contains, and says which region contains the range.
  bool Find(uint64_t addr, uint64_t len, wire::RegionInfo *region) const;
  // Every region, by address.
  std::vector<wire::RegionInfo> Snapshot() const;

  // While alive, no Replace/Revoke can happen: ranges checked with
  // ContainsHeld stay valid.
  class Hold {
   public:
    explicit Hold(const RemoteRegions &r) : r_(r), lock_(r.mu_) {}
    bool Contains(uint64_t addr, uint64_t len) const { return r_.ContainsLocked(addr, len); }

   private:
    const RemoteRegions &r_;
    std::shared_lock<std::shared_mutex> lock_;
  };

 private:
  bool ContainsLocked(uint64_t addr, uint64_t len) const { return FindLocked(addr, len) != SIZE_MAX; }
  size_t FindLocked(uint64_t addr, uint64_t len) const;
  void RebuildLocked();   // sorts, then MaxEndsLocked
  void MaxEndsLocked();   // max_end_ from the sorted regions_

  // Revocations kept for a table that arrived before them but is applied
  // after them; the newest only: the race is between two threads that each
  // just read a frame.
  static constexpr size_t kMaxTombstones = 4096;

  mutable std::shared_mutex mu_;
  std::vector<wire::RegionInfo> regions_;  // sorted by addr
  std::vector<uint64_t> max_end_;
  uint64_t table_order_ = 0;  // of the table applied last
  std::deque<std::pair<uint64_t, wire::RegionInfo>> tombstones_;  // (order, region), newer than table_order_, by arrival
};

}  // namespace hixl
