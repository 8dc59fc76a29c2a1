// cuda_ipc_channel.h: the data path to an engine on the same host whose
// memory is on a GPU. The initiator opens the target's allocations by
// their IPC handles (once each, IpcHandleCache) and copies with
// cuMemcpyAsync on a stream of its own, from and into its own device or
// host memory; a batch is done when an event recorded after its copies
// is, polled (never waited on) by the channel's poller thread, and by the
// caller of a TransferSync meanwhile.
//
// Revocation: the target revokes a region before its DeregisterMem returns
// (the peer reached its memory directly, so it must hear from us); we
// acknowledge once the copies in flight into that allocation are done and
// its mapping is closed (BeforeRevokeAck).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "device/cuda/cuda_driver.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"
#include "transport/cuda_ipc/ipc_handle_cache.h"

namespace hixl::cuda_ipc {

class CudaIpcChannel : public Channel {
 public:
  // `regions` (the link's copy of the target's table) must outlive the
  // channel; `alive` says whether the link (and so the target) is still
  // there. Copies run on device `ordinal`'s stream `stream`, taken over.
  CudaIpcChannel(cuda::Driver *driver, int ordinal, cuda::Stream stream, const RemoteRegions *regions,
                 std::function<bool()> alive);
  ~CudaIpcChannel() override;

  const char *name() const override { return "cuda_ipc"; }
  // Ours: host or device memory (unified addressing); the peer's: device.
  MemKinds local_kinds() const override { return kHostOnly | MemKindBit(wire::MemKind::kDevice); }
  MemKinds remote_kinds() const override { return MemKindBit(wire::MemKind::kDevice); }
  void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
              Deadline deadline, bool caller_waits) override;
  // GPU copies cannot be stopped: waits until those of `done` are over.
  void Cancel(const Completion *done) override;
  void Progress() override;
  void Close(const char *why) override;
  bool broken() const override;
  bool idle() const override;
  void BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) override;

  // Tests: mappings open now.
  size_t open_mappings() const;

 private:
  struct Job {
    cuda::Event event = nullptr;
    std::shared_ptr<Completion> done;
    Status status = SUCCESS;  // FAILED when a copy could not be queued
    std::vector<IpcHandleCache::Key> keys;
  };
  struct Revoke {
    IpcHandleCache::Key key;
    std::function<void()> ack;
  };

  // Polls every job's event once; finishes what is done, closes mappings
  // revoked and no longer in use. Callbacks run after mu_ is let go.
  void PollOnce() EXCLUDES(mu_);
  void Poller() EXCLUDES(mu_);
  // Polls until no job matches `pred` (or 10 s pass: a GPU copy ends in far
  // less, unless the GPU is gone).
  template <class Pred>
  void PollUntilNone(Pred pred) EXCLUDES(mu_);

  cuda::Driver *const driver_;
  const int ordinal_;
  const cuda::Stream stream_;
  const RemoteRegions *const regions_;
  const std::function<bool()> alive_;

  // Guards everything below; never held while a completion or an ack runs.
  // Taken after the remote table's lock (Submit queues copies under a Hold,
  // so that a REVOKE, which waits for Holds, finds them in jobs_).
  mutable Mutex mu_;
  CondVar cv_;  // the poller sleeps on it when there is nothing to poll
  IpcHandleCache cache_ GUARDED_BY(mu_);
  // The target's regions batches used, by (addr, len): which allocation
  // each lies in, so that its revocation closes that one.
  std::map<std::pair<uint64_t, uint64_t>, IpcHandleCache::Key> used_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Job>> jobs_ GUARDED_BY(mu_);
  std::vector<Revoke> revokes_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread poller_;
};

}  // namespace hixl::cuda_ipc
