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
#include <shared_mutex>
#include <vector>

#include "wire/messages.h"

namespace hixl {

class RemoteRegions {
 public:
  void Replace(std::vector<wire::RegionInfo> regions);
  // Removes the region (addr, len) exactly; waits for Holds using it.
  void Revoke(uint64_t addr, uint64_t len);
  bool Contains(uint64_t addr, uint64_t len) const;
  // Returns once no Hold taken before the call is alive: a copy that checks,
  // under its Hold, a flag set before this call sees it.
  void WaitForHolds();
  // Like Contains, and says which region contains the range.
  bool Find(uint64_t addr, uint64_t len, wire::RegionInfo *region) const;

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

  mutable std::shared_mutex mu_;
  std::vector<wire::RegionInfo> regions_;  // sorted by addr
  std::vector<uint64_t> max_end_;
};

}  // namespace hixl
