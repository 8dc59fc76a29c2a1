// batch_check.h: the per-descriptor work of a transfer before anything is
// sent: bounds, the local region (pinned), the remote region (from the
// link's copy of the remote table), and merging of contiguous descriptors.
// Runs once per descriptor, so it keeps the last regions it matched and
// tries them first: a batch in one region costs no lookups at all.
#pragma once

#include <cstdint>

#include <cstddef>
#include <vector>

#include "hixl/hixl_types.h"
#include "memory/registry.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"

namespace hixl {

class BatchCheck {
 public:
  enum class Verdict { kOk, kBadDescriptor, kLocalUnregistered, kLocalNoAccess, kRemoteUnknown };
  struct Result {
    Verdict verdict = Verdict::kOk;
    size_t index = 0;  // the descriptor the verdict is about
  };

  // With `pool_on`, unregistered local memory goes to `relayed` instead of
  // being refused. Registered local memory must allow `local_need`
  // (PageAccess: a READ writes it, a WRITE reads it).
  BatchCheck(const RegionTable &local, const RemoteRegions &remote, bool pool_on, unsigned local_need)
      : local_(local), remote_(remote), pool_on_(pool_on), local_need_(local_need) {}

  // Checks descs[from..]: pins local regions into `pins`, appends pieces to
  // `direct` (registered local memory) or `relayed`. Stops at the first
  // problem. After kRemoteUnknown the caller may refresh the remote table
  // and call again from result.index.
  Result Run(const std::vector<TransferOpDesc> &descs, size_t from, PinSet *pins, std::vector<Piece> *direct,
             std::vector<Piece> *relayed);
  // Forget the cached remote region (after the remote table changed).
  void ForgetRemote() { last_remote_ = {0, 0}; }

 private:
  // The cached region first (inline: most descriptors of a batch end here).
  bool RemoteKnown(uint64_t addr, uint64_t len) {
    const wire::RegionInfo &r = last_remote_;
    if (r.len != 0 && addr >= r.addr && len <= r.len && addr - r.addr <= r.len - len) return true;
    return RemoteLookup(addr, len);
  }
  bool RemoteLookup(uint64_t addr, uint64_t len);

  const RegionTable &local_;
  const RemoteRegions &remote_;
  const bool pool_on_;
  const unsigned local_need_;
  RegionTable::Ref local_hint_ = nullptr;
  wire::RegionInfo last_remote_{0, 0};
  uint64_t total_ = 0;  // bytes of the descriptors accepted so far
};

}  // namespace hixl
