// ucx_channel.h: a link's data path over UCX: one endpoint to the target's
// worker, the target's remote keys unpacked on it, and its batches in
// flight.
//
// A batch becomes one plug-in batch (a put or get per piece, contiguous
// pieces merged, then one flush); it completes when the flush does, so a
// notify sent after it never overtakes its data. Its remote ranges are
// checked against the live region table under a Hold while it is posted:
// a batch racing a revocation fails instead of being posted, and one posted
// holds the REVOKE_ACK for the regions it names until it completes
// (BeforeRevokeAck): UCX's emulated RMA and RDMA NICs check nothing at the
// target, so the target may unmap only after that answer.
//
// Cancel force-closes the endpoint (the plug-in returns only when UCX can
// no longer touch the batches' buffers); the other batches on it end FAILED,
// and the next Submit makes a new endpoint from the same worker address
// (whose keys are unpacked again).
//
// Locks: ep_mu_ (the endpoint, its keys; held across plug-in calls that
// wait for the plug-in's thread, and never taken by its callbacks) before
// mu_ (batches in flight and held acknowledgements; taken by callbacks,
// never held across a plug-in call). So that no callback reaches ep_mu_, a
// batch whose completion runs engine code when it finishes (an async
// request's release, a relay's round) ends on an I/O thread (Complete).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"
#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx {

class UcxChannel final : public Channel {
 public:
  // `regions` (the link's table) outlives the channel; `post` runs a
  // REVOKE_ACK off the plug-in's thread.
  UcxChannel(const hixl_ucx_api_t *api, hixl_ucx_context_t *ctx, std::vector<uint8_t> peer_address,
             const RemoteRegions *regions, std::string peer, std::function<void(std::function<void()>)> post);
  ~UcxChannel() override;
  // Makes the first endpoint; FAILED with *why (UCX reaches no transport of
  // the target's, say).
  Status Open(std::string *why);

  const char *name() const override { return "ucx"; }
  void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
              Deadline deadline, bool caller_waits) override;
  void Cancel(const Completion *done) override;
  void Close(const char *why) override;
  bool broken() const override;
  bool idle() const override;
  void BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) override;

  // Waits up to this long for the batches in flight when the link closes.
  static constexpr uint32_t kCloseFlushMs = 100;

 private:
  // A UCX endpoint and the keys unpacked on it (a new endpoint unpacks
  // again).
  struct Endpoint {
    UcxChannel *channel = nullptr;
    hixl_ucx_ep_t *ep = nullptr;
    std::atomic<bool> failed{false};  // its error callback ran
    // By the table entry they were unpacked from; the weak pointer tells
    // whether that entry still lives (the address alone may have been
    // reused by a newer one).
    struct Key {
      std::weak_ptr<const RemoteRegion> region;
      hixl_ucx_rkey_t *rkey = nullptr;
      unsigned access = 0;  // HIXL_UCX_REMOTE_* bits the target gave
    };
    std::unordered_map<const RemoteRegion *, Key> keys;
  };
  // A REVOKE_ACK held back until `waiting` batches complete.
  struct HeldAck {
    size_t waiting = 0;
    std::function<void()> ack;
  };
  struct Batch {
    UcxChannel *channel = nullptr;
    std::shared_ptr<Completion> done;
    std::vector<wire::RegionInfo> regions;   // the remote regions it names, each once
    std::vector<std::shared_ptr<HeldAck>> holds;  // acknowledgements waiting for it
  };

  static void OnDone(void *user, hixl_ucx_status_t status);
  static void OnError(void *user, hixl_ucx_status_t status, const char *why);
  Status NewEndpoint(std::string *why) REQUIRES(ep_mu_);
  // The key for `region` on the endpoint, and what it allows (*access):
  // cached, or unpacked now. nullptr, with *why, and *refusal set to
  // PARAM_INVALID where the target gave the region no key (else left).
  hixl_ucx_rkey_t *KeyFor(const RemoteRegion *region, unsigned *access, Status *refusal, std::string *why)
      REQUIRES(ep_mu_);
  // Drops the keys whose table entries are gone.
  void SweepKeys() REQUIRES(ep_mu_);
  // Closes the endpoint (force after flush_ms): on return every batch on it
  // had its callback (UCX touches its memory no more; a part handed to an
  // I/O thread by Complete may end a moment later).
  void EndEndpoint(uint32_t flush_ms) REQUIRES(ep_mu_);
  // The batch is over: its acknowledgements that waited only for it go.
  void Complete(Batch *batch, Status s, bool on_plugin_thread) EXCLUDES(mu_);
  // Whether a batch of `done` is in flight.
  bool InFlight(const Completion *done) const EXCLUDES(mu_);

  const hixl_ucx_api_t *const api_;
  hixl_ucx_context_t *const ctx_;
  const std::vector<uint8_t> peer_address_;
  const RemoteRegions *const regions_;
  const std::string peer_;
  const std::function<void(std::function<void()>)> post_;

  Mutex ep_mu_ ACQUIRED_BEFORE(mu_);
  std::unique_ptr<Endpoint> ep_ GUARDED_BY(ep_mu_);  // null after Cancel cut it, until the next Submit
  bool closed_ GUARDED_BY(ep_mu_) = false;
  // Read by broken() without a lock. An endpoint failed: the peer (or the
  // way to it) is gone, and the link with it.
  std::atomic<bool> closed_flag_{false};
  std::atomic<bool> failed_{false};

  mutable Mutex mu_;
  std::unordered_map<Batch *, std::unique_ptr<Batch>> inflight_ GUARDED_BY(mu_);
};

}  // namespace hixl::ucx
