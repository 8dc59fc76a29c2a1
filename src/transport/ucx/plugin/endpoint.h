// endpoint.h: a UCX endpoint to one peer worker, with peer error handling,
// the remote keys unpacked on it, and its batches in flight.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "transport/ucx/plugin/batch.h"
#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

class Context;

// A peer's key unpacked on one endpoint. Progress thread only, but for `ep`
// (constant), which batch_post reads on the caller's thread.
struct Rkey {
  Endpoint *const ep;
  ucp_rkey_h handle = nullptr;
  size_t in_use = 0;     // ops of started batches that name it
  bool dropped = false;  // rkey_destroy came while in use: destroyed at in_use 0
};

class Endpoint {
 public:
  Endpoint(Context *ctx, hixl_ucx_ep_error_cb on_error, void *user);
  ~Endpoint();
  Endpoint(const Endpoint &) = delete;
  Endpoint &operator=(const Endpoint &) = delete;

  Context *context() const { return ctx_; }
  // True once UCX reported the peer failed (any thread).
  bool failed() const { return failed_.load(); }
  void Stats(hixl_ucx_ep_stats_t *out) const;

  // Progress thread only, below.
  hixl_ucx_status_t Open(const void *peer_addr, size_t len);
  hixl_ucx_status_t Unpack(const void *packed, size_t len, Rkey **out);
  void Drop(Rkey *rkey);
  bool Owns(const Rkey *rkey) const { return rkeys_.count(const_cast<Rkey *>(rkey)) != 0; }
  // Posts the batch's ops and its flush; completes it at once if it cannot.
  void Start(std::unique_ptr<Batch> batch);
  // Waits up to flush_timeout_ms for the batches in flight, then closes:
  // gracefully if they all completed and the peer is alive, by force
  // otherwise. On return every batch has had its on_done and UCX touches
  // none of their callers' buffers; what UCX has not let go of yet (staged
  // gets, flushes) ends in the background, with the object kept alive
  // (Closed() false) until it does. OK (flushed), CANCELED (cut),
  // TIMED_OUT (UCX kept a caller's buffer: logged; a UCX defect).
  hixl_ucx_status_t Close(uint32_t flush_timeout_ms);
  // True once Close ran and UCX is done with it: no close, no batch of it
  // left in flight (the context deletes it then).
  bool Closed() const { return ep_ == nullptr && close_req_ == nullptr && active_.empty(); }
  std::string Describe() const;

 private:
  friend class Context;
  static void OnError(void *arg, ucp_ep_h ep, ucs_status_t status);
  static void OnOpDone(void *request, ucs_status_t status, void *user);
  static void OnClosed(void *request, ucs_status_t status, void *user);
  // Counts a request UCX took for op `index` (or OpRef::kFlush) of
  // `batch`; false when UCX refused it.
  bool Track(Batch *batch, ucs_status_ptr_t sp, uint32_t index);
  // Copies a completed staged get to the caller's buffer (unless cut).
  void CopyOut(Batch *batch, uint32_t index);
  // Runs the batch's on_done once, with `status`.
  void Tell(Batch *batch, hixl_ucx_status_t status);
  // The batch's last request completed: releases it, then Tell.
  void Finish(Batch *batch);
  void DestroyKeys();
  // Lets go of a graceful close still in flight (UCX finishes it alone).
  void AbandonClose();

  Context *const ctx_;
  // Progress thread only:
  hixl_ucx_ep_error_cb on_error_;  // cleared by Close
  void *user_;
  ucp_ep_h ep_ = nullptr;
  bool stage_gets_ = false;    // set by Open: see CancelWaitsForPeer
  void *close_req_ = nullptr;  // a graceful close in flight
  std::map<Rkey *, std::unique_ptr<Rkey>> rkeys_;
  std::map<Batch *, std::unique_ptr<Batch>> active_;  // batches in flight

  bool closing_ = false;  // guarded by the context's mu_

  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> batches_{0}, failed_batches_{0}, pieces_{0}, ops_{0}, bytes_{0}, last_post_ns_{0};
};

}  // namespace hixl::ucx_plugin
