#include "engine/batch_check.h"

namespace hixl {

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
    const bool staged = r != nullptr && (local_kinds_ & MemKindBit((*r)->memory->wire_kind())) == 0;
    if (staged && !pool_on_) return {Verdict::kLocalNeedsStaging, i};
    if (!RemoteKnown(d.remote_addr, d.len)) return {Verdict::kRemoteUnknown, i};
    if ((remote_kinds_ & MemKindBit(last_remote_->kind)) == 0) return {Verdict::kRemoteKind, i};
    total_ += d.len;
    // Descriptors that continue the previous one on both sides become one
    // piece, if one region on each side holds both: every transport then
    // handles fewer, longer segments (and one key per piece).
    std::vector<Piece> *out = r != nullptr && !staged ? direct : relayed;
    const Region *local = r != nullptr ? r->get() : nullptr;
    Piece *last = out->empty() ? nullptr : &out->back();
    if (last != nullptr && last->local + last->len == d.local_addr && last->remote + last->len == d.remote_addr &&
        last->local_region == local && last_remote_->Contains(last->remote, last->len + d.len)) {
      last->len += d.len;
      last->remote_region = last_remote_;
    } else {
      out->push_back({d.local_addr, d.remote_addr, d.len, local, last_remote_});
    }
  }
  return {Verdict::kOk, descs.size()};
}

}  // namespace hixl
