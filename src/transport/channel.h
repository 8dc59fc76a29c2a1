// channel.h: the data path of a link. The engine checks a batch, then hands
// it to the link's channel, which a transport made (transport.h): TCP
// streams, direct copies into a same-host peer's memory, ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "common/completion.h"
#include "common/deadline.h"
#include "wire/messages.h"

namespace hixl {

struct Region;
struct RemoteRegion;
namespace wire {
struct RegionInfo;
}

// Memory kinds (bits: 1 << wire::MemKind).
using MemKinds = unsigned;
constexpr MemKinds MemKindBit(wire::MemKind k) { return 1u << static_cast<unsigned>(k); }
constexpr MemKinds kHostOnly = MemKindBit(wire::MemKind::kHost);

// One piece of a batch: `len` bytes between local and remote addresses.
struct Piece {
  uintptr_t local;
  uintptr_t remote;
  size_t len;
  // What the batch check found, valid while the batch runs: the registered
  // local region holding the piece (pinned by the batch; nullptr for the
  // relay's staging buffers), and the remote table's entry holding it (the
  // batch keeps that table). A transport that needs keys reads them here.
  const Region *local_region = nullptr;
  const RemoteRegion *remote_region = nullptr;
};

class Channel {
 public:
  virtual ~Channel() = default;
  // The transport's name, for logs ("tcp", "shm").
  virtual const char *name() const = 0;
  // Starts moving the batch; every part it makes is one part of `done`.
  // With `caller_waits` the channel may do the work on the calling thread
  // before it returns (it then honours `deadline` itself).
  virtual void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
                      Deadline deadline, bool caller_waits) = 0;
  // After it returns, nothing of `done` touches user memory any more.
  virtual void Cancel(const Completion *done) = 0;
  // Lends the calling thread to move what is pending, without blocking (a
  // caller polling an async request). Channels that need no help ignore it.
  virtual void Progress() {}
  // Fails what is in flight and carries nothing more.
  virtual void Close(const char *why) = 0;
  // True once it can carry no more batches (a stream closed, the peer died).
  virtual bool broken() const = 0;
  // True when nothing of a caller's is in flight (the channel pool may then
  // close the link).
  virtual bool idle() const = 0;
  // The memory kinds it moves directly: of ours (the engine stages the
  // others through its buffer pool) and of the peer's (a batch touching
  // another kind there is refused).
  virtual MemKinds local_kinds() const { return kHostOnly; }
  virtual MemKinds remote_kinds() const { return kHostOnly; }
  // Heartbeat, every so often: false when the peer is gone (see
  // heartbeat.interval_ms). Channels watched by their link's control stream
  // alone need nothing more.
  virtual bool CheckAlive(int64_t interval_ms) {
    (void)interval_ms;
    return true;
  }
  // The target revoked `region` and the link's table no longer holds it
  // (no batch checked from now on names it): `ack` tells the target so. A
  // channel whose batches reach the target's memory without the target's
  // checks (an RDMA NIC, UCX's emulated RMA) calls it once none of its
  // batches in flight can still touch the region; it must not block the
  // calling I/O thread meanwhile (call `ack` later, from a completion).
  // Runs on the control stream's I/O thread.
  virtual void BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) {
    (void)region;
    ack();
  }
};

// Waits for `done` until `deadline`. On a failure or at the deadline cancels
// what is left of it on `channel` (so that nothing of it touches user memory
// afterwards) and returns the verdict: the failure, TIMEOUT, or SUCCESS when
// every part completed meanwhile after all.
inline Status AwaitOrCancel(Channel &channel, Completion &done, Deadline deadline) {
  Status s = done.Wait(deadline);
  if (s == SUCCESS) return s;
  // Finished before the cancel, whose dropped parts complete as FAILED: the
  // verdict is the timeout (unless every part completed meanwhile).
  done.Finish(s);
  channel.Cancel(&done);
  done.Poll(&s);
  return s;
}

}  // namespace hixl
