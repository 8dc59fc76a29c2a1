#include "transport/ucx/plugin/endpoint.h"

#include <cstring>

#include "common/deadline.h"
#include "transport/ucx/plugin/context.h"
#include "transport/ucx/plugin/describe.h"
#include "transport/ucx/plugin/plugin_log.h"
#include "transport/ucx/plugin/status.h"

namespace hixl::ucx_plugin {
namespace {

// After a forced close UCX lets go of the caller's buffers at once (staged
// gets aside); the bound only keeps a UCX defect from hanging the caller.
constexpr int64_t kForcedCloseMs = 10000;
// The longest a graceful close (the peer is told) may hold ep_destroy,
// within its flush timeout; a close still in flight ends in the background.
constexpr uint32_t kGracefulCloseMs = 1000;

}  // namespace

Endpoint::Endpoint(Context *ctx, hixl_ucx_ep_error_cb on_error, void *user)
    : ctx_(ctx), on_error_(on_error), user_(user) {}

Endpoint::~Endpoint() = default;

void Endpoint::Stats(hixl_ucx_ep_stats_t *out) const {
  out->batches = batches_.load();
  out->failed_batches = failed_batches_.load();
  out->pieces = pieces_.load();
  out->ops = ops_.load();
  out->bytes = bytes_.load();
  out->last_post_ns = last_post_ns_.load();
}

hixl_ucx_status_t Endpoint::Open(const void *peer_addr, size_t len) {
  ucp_ep_params_t p{};
  p.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = static_cast<const ucp_address_t *>(peer_addr);
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &Endpoint::OnError;
  p.err_handler.arg = this;
  ucs_status_t st = ucp_ep_create(ctx_->worker(), &p, &ep_);
  if (st != UCS_OK) {
    ep_ = nullptr;
    UCXP_LOGE("a UCX endpoint to a peer's %zu-byte worker address failed: %s", len, ucs_status_string(st));
    return FromUcs(st);
  }
  std::string lanes = Describe();
  stage_gets_ = CancelWaitsForPeer(lanes);
  UCXP_LOGI("UCX endpoint %p uses %s%s", static_cast<void *>(this), lanes.c_str(),
            stage_gets_ ? "; gets are staged" : "");
  return HIXL_UCX_OK;
}

void Endpoint::OnError(void *arg, ucp_ep_h, ucs_status_t status) {
  auto *self = static_cast<Endpoint *>(arg);
  if (self->failed_.exchange(true)) return;
  UCXP_LOGW("UCX endpoint %p: the peer failed: %s", arg, ucs_status_string(status));
  if (self->on_error_ != nullptr) self->on_error_(self->user_, HIXL_UCX_ERR_PEER_FAILED, ucs_status_string(status));
}

hixl_ucx_status_t Endpoint::Unpack(const void *packed, size_t len, Rkey **out) {
  ucp_rkey_h handle = nullptr;
  ucs_status_t st = ucp_ep_rkey_unpack(ep_, packed, &handle);
  if (st != UCS_OK) {
    UCXP_LOGE("unpacking a peer's %zu-byte UCX key failed: %s", len, ucs_status_string(st));
    return FromUcs(st);
  }
  std::unique_ptr<Rkey> rkey(new Rkey{this});
  rkey->handle = handle;
  *out = rkey.get();
  rkeys_.emplace(rkey.get(), std::move(rkey));
  return HIXL_UCX_OK;
}

void Endpoint::Drop(Rkey *rkey) {
  if (rkey->in_use > 0) {
    rkey->dropped = true;  // the last batch naming it destroys it
    return;
  }
  ucp_rkey_destroy(rkey->handle);
  rkeys_.erase(rkey);
}

void Endpoint::DestroyKeys() {
  for (auto &[raw, rkey] : rkeys_) ucp_rkey_destroy(rkey->handle);
  rkeys_.clear();
}

bool Endpoint::Track(Batch *b, ucs_status_ptr_t sp, uint32_t index) {
  if (UCS_PTR_IS_ERR(sp)) {
    b->Fail(UCS_PTR_STATUS(sp));
    return false;
  }
  if (UCS_PTR_IS_PTR(sp)) {
    if (index == OpRef::kFlush) {
      b->flush_left = true;
    } else {
      ++b->ops_left;
    }
  } else if (index != OpRef::kFlush) {
    CopyOut(b, index);  // done at once
  }
  return true;
}

void Endpoint::CopyOut(Batch *b, uint32_t index) {
  if (!b->staged || b->cut) return;
  const Op &op = b->ops[index];
  std::memcpy(reinterpret_cast<void *>(op.local), b->staging.get() + op.staged_at, op.len);
}

void Endpoint::Start(std::unique_ptr<Batch> owned) {
  Clock::time_point t0 = Clock::now();
  Batch *b = owned.get();
  active_.emplace(b, std::move(owned));
  pieces_ += b->pieces;
  ops_ += b->ops.size();
  for (const Op &op : b->ops) {
    if (!Owns(op.rkey) || op.rkey->dropped) {
      UCXP_LOGE("a batch names a UCX key dropped before the batch started");
      b->status = HIXL_UCX_ERR_INVALID;
      b->why = "a key was dropped";
      b->posted_all = true;
      Finish(b);
      return;
    }
  }
  if (failed_) {
    b->status = HIXL_UCX_ERR_PEER_FAILED;
    b->why = "the peer failed before the batch started";
    b->posted_all = true;
    Finish(b);
    return;
  }
  for (const Op &op : b->ops) ++op.rkey->in_use;
  b->keys_held = true;
  b->staged = stage_gets_ && b->op == HIXL_UCX_OP_GET;
  if (b->staged) {
    b->staging.reset(new uint8_t[b->bytes]);
    uint64_t at = 0;
    for (Op &op : b->ops) {
      op.staged_at = at;
      at += op.len;
    }
  }
  b->refs.resize(b->ops.size() + 1);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &Endpoint::OnOpDone;
  for (uint32_t i = 0; i < b->ops.size(); ++i) {
    const Op &op = b->ops[i];
    b->refs[i] = {b, i};
    p.user_data = &b->refs[i];
    ucs_status_ptr_t sp;
    if (b->op == HIXL_UCX_OP_PUT) {
      sp = ucp_put_nbx(ep_, reinterpret_cast<const void *>(op.local), op.len, op.remote, op.rkey->handle, &p);
    } else {
      void *dst = b->staged ? b->staging.get() + op.staged_at : reinterpret_cast<void *>(op.local);
      sp = ucp_get_nbx(ep_, dst, op.len, op.remote, op.rkey->handle, &p);
    }
    if (!Track(b, sp, i)) break;
  }
  // One flush, for puts: they complete at the peer before on_done. A get
  // has landed here when its own request completes, so a get batch needs
  // none (over UCX's emulated transports a flush costs a round trip).
  if (b->status == HIXL_UCX_OK && b->op == HIXL_UCX_OP_PUT) {
    b->refs.back() = {b, OpRef::kFlush};
    p.user_data = &b->refs.back();
    Track(b, ucp_ep_flush_nbx(ep_, &p), OpRef::kFlush);
  }
  b->posted_all = true;
  auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0);
  last_post_ns_ = static_cast<uint64_t>(took.count());
  if (b->Done()) Finish(b);
}

void Endpoint::OnOpDone(void *request, ucs_status_t status, void *user) {
  auto *ref = static_cast<OpRef *>(user);
  Batch *b = ref->batch;
  ucp_request_free(request);
  if (status != UCS_OK) {
    b->Fail(status);
  } else if (ref->index != OpRef::kFlush) {
    b->ep->CopyOut(b, ref->index);
  }
  if (ref->index == OpRef::kFlush) {
    b->flush_left = false;
  } else {
    --b->ops_left;
  }
  if (b->Done()) b->ep->Finish(b);
}

void Endpoint::Tell(Batch *b, hixl_ucx_status_t status) {
  if (b->told) return;
  b->told = true;
  ++batches_;
  if (status == HIXL_UCX_OK) {
    bytes_ += b->bytes;
  } else {
    ++failed_batches_;
    // A cut batch was asked for (ep_destroy); the first other failure of an
    // endpoint says why, the rest of its batches fail the same way.
    if (status == HIXL_UCX_ERR_CANCELED || failed_batches_ > 1) {
      UCXP_LOGD("UCX batch of %zu ops failed: %s", b->ops.size(), b->why.c_str());
    } else {
      UCXP_LOGW("UCX batch of %zu ops failed: %s", b->ops.size(), b->why.c_str());
    }
  }
  b->on_done(b->user, status);
}

void Endpoint::Finish(Batch *b) {
  auto it = active_.find(b);
  std::unique_ptr<Batch> owned = std::move(it->second);
  active_.erase(it);
  if (b->keys_held) {
    for (const Op &op : b->ops) {
      // A lingering endpoint's keys may be gone (context shutdown).
      auto key = rkeys_.find(op.rkey);
      if (key == rkeys_.end()) continue;
      Rkey *rkey = key->first;
      if (--rkey->in_use == 0 && rkey->dropped) {
        ucp_rkey_destroy(rkey->handle);
        rkeys_.erase(key);
      }
    }
  }
  Tell(b, b->status);
}

void Endpoint::AbandonClose() {
  if (close_req_ == nullptr) return;
  ucp_request_free(close_req_);  // no callback after this
  close_req_ = nullptr;
}

void Endpoint::OnClosed(void *request, ucs_status_t, void *user) {
  auto *self = static_cast<Endpoint *>(user);
  ucp_request_free(request);
  self->close_req_ = nullptr;
}

hixl_ucx_status_t Endpoint::Close(uint32_t flush_timeout_ms) {
  on_error_ = nullptr;  // the caller hears nothing of it once ep_destroy returns
  if (ep_ == nullptr) return HIXL_UCX_OK;
  Deadline flushed_by = Deadline::AfterMillis(flush_timeout_ms);
  if (!active_.empty() && !failed_) {
    ctx_->ProgressUntil([this] { return active_.empty() || failed_; }, flushed_by);
  }
  if (active_.empty() && !failed_) {
    // Nothing in flight: close gracefully, so that the peer drops its side.
    DestroyKeys();
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = &Endpoint::OnClosed;
    p.user_data = this;
    ucs_status_ptr_t sp = ucp_ep_close_nbx(ep_, &p);
    ep_ = nullptr;
    if (UCS_PTR_IS_PTR(sp)) {
      close_req_ = sp;
      Deadline closed_by = flushed_by.Earlier(Deadline::AfterMillis(kGracefulCloseMs));
      ctx_->ProgressUntil([this] { return close_req_ == nullptr; }, closed_by);
    }
    return HIXL_UCX_OK;
  }
  // Forced: UCX cancels what it can at once and lets go of the caller's
  // buffers (over shared memory it lets go of requests already in the
  // peer's queue only when the peer drains it: hence staged gets).
  bool cut = !active_.empty();
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t sp = ucp_ep_close_nbx(ep_, &p);
  ep_ = nullptr;
  if (UCS_PTR_IS_PTR(sp)) ucp_request_free(sp);  // UCX 1.13 returns none for a forced close
  auto caller_free = [this] {
    for (const auto &[b, owned] : active_) {
      if (!b->CallerMemoryFree()) return false;
    }
    return true;
  };
  if (!ctx_->ProgressUntil(caller_free, Deadline::AfterMillis(kForcedCloseMs))) {
    UCXP_LOGE("UCX still used the buffers of a batch %lld ms after a forced close",
              static_cast<long long>(kForcedCloseMs));
    return HIXL_UCX_ERR_TIMED_OUT;
  }
  // What is left finishes in the background, without the caller.
  for (const auto &[b, owned] : active_) {
    b->cut = true;
    Tell(b, HIXL_UCX_ERR_CANCELED);
  }
  std::vector<Rkey *> keys;
  for (const auto &[raw, rkey] : rkeys_) keys.push_back(raw);
  for (Rkey *rkey : keys) Drop(rkey);
  return cut ? HIXL_UCX_ERR_CANCELED : HIXL_UCX_OK;
}

std::string Endpoint::Describe() const { return ep_ == nullptr ? "(closed)" : DescribeTransports(ep_); }

}  // namespace hixl::ucx_plugin
