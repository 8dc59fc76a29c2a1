#include "transport/ucx/ucx_channel.h"

#include <algorithm>

#include "common/log.h"
#include "transport/ucx/ucx_transport.h"

namespace hixl::ucx {
namespace {

// Fails a batch that was never posted.
void FailUnposted(const std::shared_ptr<Completion> &done, Status s = FAILED) {
  done->AddParts(1);
  done->PartDone(s);
}

}  // namespace

UcxChannel::UcxChannel(const hixl_ucx_api_t *api, hixl_ucx_context_t *ctx, std::vector<uint8_t> peer_address,
                       const RemoteRegions *regions, std::string peer,
                       std::function<void(std::function<void()>)> post)
    : api_(api),
      ctx_(ctx),
      peer_address_(std::move(peer_address)),
      regions_(regions),
      peer_(std::move(peer)),
      post_(std::move(post)) {}

UcxChannel::~UcxChannel() { Close("the link is gone"); }

Status UcxChannel::Open(std::string *why) {
  MutexLock lock(&ep_mu_);
  Status s = NewEndpoint(why);
  if (s != SUCCESS) return s;
  char desc[512] = {0};
  if (api_->ep_describe(ep_->ep, desc, sizeof(desc)) != HIXL_UCX_OK) desc[0] = '\0';
  HIXL_LOGI("link to %s: ucx over %s", peer_.c_str(), desc[0] != '\0' ? desc : "(UCX did not say)");
  return SUCCESS;
}

Status UcxChannel::NewEndpoint(std::string *why) {
  auto e = std::make_unique<Endpoint>();
  e->channel = this;
  hixl_ucx_status_t st =
      api_->ep_create(ctx_, peer_address_.data(), peer_address_.size(), &UcxChannel::OnError, e.get(), &e->ep);
  if (st != HIXL_UCX_OK) {
    *why = std::string("UCX cannot make an endpoint to the target's worker: ") + api_->status_name(st) +
           (st == HIXL_UCX_ERR_UNREACHABLE ? " (no UCX transport of ours reaches one of its: see UCX_TLS)" : "");
    return FAILED;
  }
  ep_ = std::move(e);
  return SUCCESS;
}

void UcxChannel::OnError(void *user, hixl_ucx_status_t status, const char *why) {
  auto *e = static_cast<Endpoint *>(user);
  e->failed = true;
  e->channel->failed_ = true;
  HIXL_LOGW("link to %s: the ucx endpoint failed (%s: %s); its batches fail", e->channel->peer_.c_str(),
            e->channel->api_->status_name(status), why != nullptr ? why : "");
}

void UcxChannel::SweepKeys() {
  std::vector<hixl_ucx_rkey_t *> gone;
  for (auto it = ep_->keys.begin(); it != ep_->keys.end();) {
    if (it->second.region.expired()) {
      gone.push_back(it->second.rkey);
      it = ep_->keys.erase(it);
    } else {
      ++it;
    }
  }
  for (hixl_ucx_rkey_t *k : gone) api_->rkey_destroy(k);
}

hixl_ucx_rkey_t *UcxChannel::KeyFor(const RemoteRegion *region, unsigned *access, Status *refusal, std::string *why) {
  auto it = ep_->keys.find(region);
  if (it != ep_->keys.end()) {
    // The same live object: its key. (An expired entry's address may have
    // been reused by a newer entry with another key.)
    if (auto live = it->second.region.lock(); live.get() == region) {
      *access = it->second.access;
      return it->second.rkey;
    }
  }
  SweepKeys();
  // The shared pointer of the entry, from the table in place (the batch
  // keeps an older one alive; an entry gone from the live table was revoked
  // or replaced meanwhile: the batch fails rather than use its key).
  std::shared_ptr<const RemoteRegion> owner = regions_->Live(region);
  if (owner == nullptr) {
    *why = "the target's region table changed under the batch (a region revoked or registered again)";
    return nullptr;
  }
  EntryKey entry;
  if (!DecodeEntryKey(region->sections, &entry, why)) {
    // No key at all: a region this link cannot reach, as asked (nothing moves).
    if (wire::FindSection(region->sections, kWireId) == nullptr) *refusal = PARAM_INVALID;
    return nullptr;
  }
  hixl_ucx_rkey_t *rkey = nullptr;
  hixl_ucx_status_t st = api_->rkey_unpack(ep_->ep, entry.packed, entry.len, &rkey);
  if (st != HIXL_UCX_OK) {
    *why = std::string("UCX refused the region's key: ") + api_->status_name(st);
    return nullptr;
  }
  ep_->keys[region] = Endpoint::Key{owner, rkey, entry.access};
  *access = entry.access;
  return rkey;
}

void UcxChannel::Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
                        Deadline, bool) {
  if (n == 0) return;
  MutexLock lock(&ep_mu_);
  std::string why;
  if (closed_) {
    FailUnposted(done);
    return;
  }
  if (ep_ == nullptr && NewEndpoint(&why) != SUCCESS) {  // the last one was cut by Cancel
    HIXL_LOGE("link to %s: %s", peer_.c_str(), why.c_str());
    FailUnposted(done);
    return;
  }
  if (ep_->failed) {
    HIXL_LOGE_RL("link to %s: the ucx endpoint failed; the batch is not sent", peer_.c_str());
    FailUnposted(done);
    return;
  }
  auto batch = std::make_unique<Batch>();
  batch->channel = this;
  batch->done = done;
  std::vector<hixl_ucx_piece_t> ops(n);
  const RemoteRegion *last = nullptr;
  hixl_ucx_rkey_t *last_key = nullptr;
  for (size_t i = 0; i < n; ++i) {
    const Piece &p = pieces[i];
    if (p.remote_region != last || last == nullptr) {
      last = p.remote_region;
      unsigned access = 0;
      Status refusal = FAILED;
      last_key = last != nullptr ? KeyFor(last, &access, &refusal, &why) : nullptr;
      if (last == nullptr) why = "a piece names no remote region";
      if (last_key == nullptr) {
        HIXL_LOGE("link to %s: batch of %zu pieces not sent: %s", peer_.c_str(), n, why.c_str());
        FailUnposted(done, refusal);
        return;
      }
      if (is_write && (access & HIXL_UCX_REMOTE_WRITE) == 0) {
        // UCX's emulated put would write it unchecked, faulting the target.
        HIXL_LOGE("link to %s: WRITE of %zu pieces refused, nothing sent: the target's region 0x%llx+%llu is one "
                  "that process may not write (all of it) as registered",
                  peer_.c_str(), n, static_cast<unsigned long long>(last->range.addr),
                  static_cast<unsigned long long>(last->range.len));
        FailUnposted(done, PARAM_INVALID);
        return;
      }
      const wire::RegionInfo r = last->range;
      if (std::none_of(batch->regions.begin(), batch->regions.end(),
                       [&r](const wire::RegionInfo &x) { return x.addr == r.addr && x.len == r.len; })) {
        batch->regions.push_back(r);
      }
    }
    ops[i] = {p.local, p.remote, p.len, last_key};
  }
  Batch *raw = batch.get();
  done->AddParts(1);
  {
    // Checked against the live table and posted under one Hold: a REVOKE
    // is applied either before (the batch fails here) or after the batch is
    // in flight (its acknowledgement then waits for the batch).
    RemoteRegions::Hold hold(*regions_);
    for (size_t i = 0; i < n; ++i) {
      if (!hold.Contains(pieces[i].remote, pieces[i].len)) {
        HIXL_LOGE_RL("link to %s: the target revoked a region the batch names (0x%llx+%zu); nothing sent",
                     peer_.c_str(), static_cast<unsigned long long>(pieces[i].remote), pieces[i].len);
        done->PartDone(FAILED);
        return;
      }
    }
    {
      MutexLock l(&mu_);
      inflight_.emplace(raw, std::move(batch));
    }
    hixl_ucx_status_t st = api_->batch_post(ep_->ep, is_write ? HIXL_UCX_OP_PUT : HIXL_UCX_OP_GET, ops.data(),
                                            ops.size(), &UcxChannel::OnDone, raw);
    if (st == HIXL_UCX_OK) return;
    HIXL_LOGE_RL("link to %s: UCX refused a batch of %zu pieces: %s", peer_.c_str(), n, api_->status_name(st));
  }
  Complete(raw, FAILED, /*on_plugin_thread=*/false);
}

void UcxChannel::OnDone(void *user, hixl_ucx_status_t status) {
  auto *batch = static_cast<Batch *>(user);
  if (status != HIXL_UCX_OK && status != HIXL_UCX_ERR_CANCELED) {
    HIXL_LOGE_RL("link to %s: a ucx batch failed: %s", batch->channel->peer_.c_str(),
                 batch->channel->api_->status_name(status));
  }
  batch->channel->Complete(batch, status == HIXL_UCX_OK ? SUCCESS : FAILED, /*on_plugin_thread=*/true);
}

void UcxChannel::Complete(Batch *batch, Status s, bool on_plugin_thread) {
  std::unique_ptr<Batch> mine;
  std::vector<std::function<void()>> acks;
  {
    MutexLock lock(&mu_);
    auto it = inflight_.find(batch);
    if (it == inflight_.end()) return;
    mine = std::move(it->second);
    inflight_.erase(it);
    for (auto &h : mine->holds) {
      if (--h->waiting == 0) acks.push_back(std::move(h->ack));
    }
  }
  // The batch's memory is no longer touched: its part ends (the caller may
  // free its buffers), then the held answers go. What finishing a
  // completion runs (an async request's release, a relay's round: its
  // cancel, its next round) may call this channel and wait for the
  // plug-in's thread, so there such a part ends on an I/O thread; a part
  // that only wakes its waiting caller ends at once.
  std::shared_ptr<Completion> done = std::move(mine->done);
  if (on_plugin_thread && done->HasOnFinish()) {
    post_([done, s, acks = std::move(acks)] {
      done->PartDone(s);
      for (const auto &a : acks) a();
    });
    return;
  }
  done->PartDone(s);
  for (auto &a : acks) post_(std::move(a));
}

void UcxChannel::BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) {
  auto held = std::make_shared<HeldAck>();
  {
    MutexLock lock(&mu_);
    for (auto &[raw, b] : inflight_) {
      for (const auto &r : b->regions) {
        if (r.addr == region.addr && r.len == region.len) {
          b->holds.push_back(held);
          ++held->waiting;
          break;
        }
      }
    }
    if (held->waiting > 0) {
      held->ack = std::move(ack);
      HIXL_LOGD("link to %s: REVOKE of 0x%llx+%llu answered once %zu batch(es) complete", peer_.c_str(),
                static_cast<unsigned long long>(region.addr), static_cast<unsigned long long>(region.len),
                held->waiting);
      return;
    }
  }
  ack();
}

void UcxChannel::EndEndpoint(uint32_t flush_ms) {
  if (ep_ == nullptr) return;
  // Its keys go with it. On return every batch on it has completed (the
  // callbacks take mu_, which is not held here).
  api_->ep_destroy(ep_->ep, flush_ms);
  ep_.reset();
}

bool UcxChannel::InFlight(const Completion *done) const {
  MutexLock lock(&mu_);
  for (const auto &[raw, b] : inflight_) {
    if (b->done.get() == done) return true;
  }
  return false;
}

void UcxChannel::Cancel(const Completion *done) {
  // Nothing of it in flight (completed, or cut by an earlier Cancel): no
  // wait for ep_mu_, which a Cancel closing the endpoint holds meanwhile.
  if (!InFlight(done)) return;
  MutexLock lock(&ep_mu_);
  if (!InFlight(done)) return;  // it completed while we waited
  // UCX cannot take back single operations: the endpoint goes, with every
  // batch on it (they end FAILED), and the next Submit makes a new one.
  HIXL_LOGI("link to %s: cancelling a ucx batch closes its endpoint; the next batch makes a new one",
            peer_.c_str());
  EndEndpoint(0);
}

void UcxChannel::Close(const char *why) {
  MutexLock lock(&ep_mu_);
  if (closed_) return;
  closed_ = true;
  closed_flag_ = true;
  HIXL_LOGD("link to %s: ucx channel closed: %s", peer_.c_str(), why);
  EndEndpoint(kCloseFlushMs);
}

bool UcxChannel::broken() const { return closed_flag_ || failed_; }

bool UcxChannel::idle() const {
  MutexLock lock(&mu_);
  return inflight_.empty();
}

}  // namespace hixl::ucx
