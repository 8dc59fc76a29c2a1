// remote_regions.h: the initiator's copy of a target's region table, used to
// refuse a bad batch before any of it is sent. The target checks again on
// every frame; this copy only has to be fresh enough to say yes, and is
// refreshed from the target when it says no.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "wire/messages.h"

namespace hixl {

class RemoteRegions {
 public:
  void Replace(std::vector<wire::RegionInfo> regions);
  bool Contains(uint64_t addr, uint64_t len) const;

 private:
  mutable std::mutex mu_;
  std::vector<wire::RegionInfo> regions_;  // sorted by addr
  std::vector<uint64_t> max_end_;
};

}  // namespace hixl
