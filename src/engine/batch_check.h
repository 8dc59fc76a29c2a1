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

// What a batch's pieces point into (Piece::local_region, remote_region),
// held while it runs: its local regions, pinned (DeregisterMem waits for
// them), and the remote tables it was checked against.
struct BatchHold {
  PinSet pins;
  std::vector<std::shared_ptr<const RemoteTable>> tables;
  void Release() {
    pins.Release();
    tables.clear();
  }
};

class BatchCheck {
 public:
  enum class Verdict {
    kOk,
    kBadDescriptor,
    kLocalUnregistered,
    kLocalNoAccess,
    kLocalNeedsStaging,  // memory the channel does not take, and the buffer pool is off
    kRemoteUnknown,
    kRemoteKind,         // remote memory of a kind the channel cannot reach
  };
  struct Result {
    Verdict verdict = Verdict::kOk;
    size_t index = 0;  // the descriptor the verdict is about
  };

  // With `pool_on`, unregistered local memory goes to `relayed` instead of
  // being refused. Registered local memory must allow `local_need`
  // (PageAccess: a READ writes it, a WRITE reads it). Registered memory of
  // a kind outside `local_kinds` (what the channel takes) goes to `relayed`
  // too, to be staged; remote memory must be of `remote_kinds`.
  BatchCheck(const RegionTable &local, const RemoteTable &remote, bool pool_on, unsigned local_need,
             MemKinds local_kinds = kHostOnly, MemKinds remote_kinds = kHostOnly)
      : local_(local),
        remote_(&remote),
        pool_on_(pool_on),
        local_need_(local_need),
        local_kinds_(local_kinds),
        remote_kinds_(remote_kinds) {}

  // Checks descs[from..]: pins local regions into `pins`, appends pieces to
  // `direct` (registered local memory) or `relayed`. Stops at the first
  // problem. After kRemoteUnknown the caller may refresh the remote table
  // and call again from result.index.
  Result Run(const std::vector<TransferOpDesc> &descs, size_t from, PinSet *pins, std::vector<Piece> *direct,
             std::vector<Piece> *relayed);
  // Checks the rest against `remote` (a newer table, which the caller
  // keeps as long as the first).
  void SetRemote(const RemoteTable &remote) {
    remote_ = &remote;
    last_remote_ = nullptr;
  }

 private:
  // The cached region first (inline: most descriptors of a batch end here).
  bool RemoteKnown(uint64_t addr, uint64_t len) {
    if (last_remote_ != nullptr && last_remote_->Contains(addr, len)) return true;
    const RemoteRegion *r = remote_->Find(addr, len);
    if (r == nullptr) return false;
    last_remote_ = r;
    return true;
  }

  const RegionTable &local_;
  const RemoteTable *remote_;
  const bool pool_on_;
  const unsigned local_need_;
  const MemKinds local_kinds_;
  const MemKinds remote_kinds_;
  RegionTable::Ref local_hint_ = nullptr;
  const RemoteRegion *last_remote_ = nullptr;
  uint64_t total_ = 0;  // bytes of the descriptors accepted so far
};

}  // namespace hixl
