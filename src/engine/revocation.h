// revocation.h: DeregisterMem's reach into the peers' copies of our region
// table. Every connected peer's control stream is told to forget the region
// (REVOKE), in two kinds:
//
// - Peers on this host that copy into our memory themselves (shm). No byte
//   may land after DeregisterMem returns, so it waits until each has
//   confirmed. A peer confirms by acknowledging the REVOKE, or by closing its
//   end of the stream: it waits for its copies in flight before it does (and
//   a process that dies has no thread left copying by the time its sockets
//   close). Our own closing of the stream proves nothing, since the peer
//   copies without it: a peer we hang up on (no heartbeat, a protocol error,
//   no answer to a REVOKE) stays unconfirmed until its end closes (see
//   TargetStream::HangUp).
// - Peers over tcp. We refuse their frames into the region ourselves, so
//   nothing depends on them for safety; they are told so that a batch they
//   start after DeregisterMem returned is refused whole by their own check
//   (PARAM_INVALID, nothing moved) rather than in part by ours (FAILED,
//   bytes moved elsewhere). DeregisterMem waits for them a short while
//   (Engine::kNoticeLimit); one that does not answer in time is late: still
//   told, but not waited for until it answers one, so a frozen or hostile
//   peer costs that wait once. A peer that has not answered
//   kMaxTcpUnanswered is not told more (its table may then go stale; our
//   own check still refuses its frames), so a peer that reads nothing
//   cannot make us queue REVOKEs without bound, and a legitimate one under a
//   flood of deregistrations stays within what an initiator accepts
//   (InitiatorStream::kMaxUnackedRevokes).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "common/mutex.h"
#include "control/peer_handler.h"
#include "wire/messages.h"

namespace hixl {

class Revocation {
 public:
  // A peer's control stream; `direct`: it copies into our memory itself.
  void AddPeer(const std::shared_ptr<ControlPeer> &stream, bool direct) EXCLUDES(mu_);
  // It chose a transport that does not copy into our memory itself (USING): a tcp-like peer from now on.
  // Revocations it owes as a direct peer are still waited for.
  void SetIndirect(ControlPeer *stream) EXCLUDES(mu_);
  void RemovePeer(ControlPeer *stream) EXCLUDES(mu_);
  static constexpr size_t kMaxTcpUnanswered = 256;

  // Sends REVOKE for `region` to every direct peer, and with `tell_tcp` to
  // every tcp peer (see kMaxTcpUnanswered); returns the revocation's id to
  // wait on.
  uint64_t Start(const wire::RegionInfo &region, bool tell_tcp) EXCLUDES(mu_);
  // Waits up to `limit` for the tcp peers of revocation `id` that are not
  // late to answer; those that did not are late from now on (logged) until
  // they answer one. Never hangs up.
  void WaitTcp(uint64_t id, std::chrono::milliseconds limit) EXCLUDES(mu_);
  // Waits up to `limit` for every direct peer of revocation `id` to confirm.
  // True: all did (the id is forgotten). False (logged): the ones that did
  // not are hung up on, and the id stays, to Wait on again (or Forget).
  // Always false once the id was forgotten unconfirmed.
  bool Wait(uint64_t id, std::chrono::milliseconds limit) EXCLUDES(mu_);
  void Forget(uint64_t id) EXCLUDES(mu_);
  // `stream` answered revocation `id` (or closed, which is as good).
  void OnAck(uint64_t id, ControlPeer *stream) EXCLUDES(mu_);

 private:
  // Peer and Pending are under the Revocation's mu_ (their maps are).
  struct Peer {
    std::weak_ptr<ControlPeer> stream;
    bool direct = false;
    bool late = false;           // a tcp peer that did not answer a REVOKE in time, nor any since
    std::set<uint64_t> told;     // as a tcp peer: the revocations it has not answered
  };
  struct Pending {
    wire::RegionInfo region;
    size_t direct_count = 0;  // direct peers told
    // The peers that still owe an answer, with whether each is direct.
    std::map<ControlPeer *, std::pair<std::weak_ptr<ControlPeer>, bool>> owing;
    size_t DirectOwing() const;
  };

  // Guards the peers and the revocations under way; cv_ wakes the waiters
  // on an answer. Never held while a stream runs anything: pushes and
  // hang-ups are posted to its worker (Wait posts under it, so it comes
  // before a worker's lock).
  Mutex mu_;
  CondVar cv_;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::map<ControlPeer *, Peer> peers_ GUARDED_BY(mu_);
  // Shared: several callers may Wait on one id (a retried DeregisterMem and
  // Finalize), and one may erase it while another still waits. The Pending
  // objects too are read and written only under mu_.
  std::map<uint64_t, std::shared_ptr<Pending>> waiting_ GUARDED_BY(mu_);
  // Ids given up on (Finalize): a Wait on one is not a confirmation, unlike
  // a Wait on an id that is gone because it was confirmed.
  std::set<uint64_t> forgotten_ GUARDED_BY(mu_);
};

}  // namespace hixl
