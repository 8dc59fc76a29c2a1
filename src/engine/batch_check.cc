#include "engine/batch_check.h"

namespace hixl {

bool BatchCheck::RemoteLookup(uint64_t addr, uint64_t len) {
  wire::RegionInfo found;
  if (!remote_.Find(addr, len, &found)) return false;
  last_remote_ = found;
  return true;
}

BatchCheck::Result BatchCheck::Run(const std::vector<TransferOpDesc> &descs, size_t from, PinSet *pins,
                                   std::vector<Piece> *direct, std::vector<Piece> *relayed) {
  if (from < descs.size()) direct->reserve(direct->size() + descs.size() - from);
  for (size_t i = from; i < descs.size(); ++i) {
    const TransferOpDesc &d = descs[i];
    // The batch's total must fit 64 bits too: the transports add it up.
    if (d.len == 0 || d.local_addr == 0 || d.local_addr + d.len < d.local_addr ||
        d.remote_addr + d.len < d.remote_addr || d.len > UINT64_MAX - total_) {
      return {Verdict::kBadDescriptor, i};
    }
    RegionTable::Ref r = local_hint_ != nullptr && (*local_hint_)->Contains(d.local_addr, d.len)
                             ? local_hint_
                             : local_.Find(d.local_addr, d.len, nullptr);
    if (r != nullptr) {
      if (r != local_hint_ && !pins->Add(*r)) r = nullptr;  // deregistered just now
      local_hint_ = r;
    }
    if (r == nullptr && !pool_on_) return {Verdict::kLocalUnregistered, i};
    if (r != nullptr && !Registry::Allows(**r, d.local_addr, d.len, local_need_)) return {Verdict::kLocalNoAccess, i};
    if (!RemoteKnown(d.remote_addr, d.len)) return {Verdict::kRemoteUnknown, i};
    total_ += d.len;
    // Descriptors that continue the previous one on both sides become one
    // piece, if one remote region holds both: every transport then handles
    // fewer, longer segments.
    std::vector<Piece> *out = r != nullptr ? direct : relayed;
    const wire::RegionInfo &region = last_remote_;
    if (!out->empty() && out->back().local + out->back().len == d.local_addr &&
        out->back().remote + out->back().len == d.remote_addr && out->back().remote >= region.addr &&
        d.remote_addr + d.len <= region.addr + region.len) {
      out->back().len += d.len;
    } else {
      out->push_back({d.local_addr, d.remote_addr, d.len});
    }
  }
  return {Verdict::kOk, descs.size()};
}

}  // namespace hixl
