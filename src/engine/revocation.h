// revocation.h: DeregisterMem's reach into the peers that copy into this
// engine's memory themselves (shm). Every control stream of a peer on this
// host is told to forget the region, and DeregisterMem waits until each has
// confirmed, so that no byte lands in memory after it was deregistered.
//
// A peer confirms by acknowledging the REVOKE, or by closing its end of the
// stream: it waits for its copies in flight before it does (and a process
// that dies has no thread left copying by the time its sockets close). Our
// own closing of the stream proves nothing, since the peer copies without
// it: a peer we hang up on (no heartbeat, a protocol error, no answer to a
// REVOKE) stays unconfirmed until its end closes (see TargetStream::HangUp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "transport/tcp/target_stream.h"
#include "wire/messages.h"

namespace hixl {

class Revocation {
 public:
  void AddPeer(const std::shared_ptr<tcp::TargetStream> &stream);
  void RemovePeer(tcp::TargetStream *stream);
  // Sends REVOKE for `region` to every peer; returns the revocation's id
  // to Wait on.
  uint64_t Start(const wire::RegionInfo &region);
  // Waits up to `limit` for every peer of revocation `id` to confirm. True:
  // all did (the id is forgotten). False (logged): the ones that did not are
  // hung up on, and the id stays, to Wait on again (or Forget). Always false
  // once the id was forgotten unconfirmed.
  bool Wait(uint64_t id, std::chrono::milliseconds limit);
  void Forget(uint64_t id);
  void OnAck(uint64_t id);

 private:
  struct Pending {
    wire::RegionInfo region;
    size_t due = 0;  // confirmations still to come
    std::vector<std::weak_ptr<tcp::TargetStream>> streams;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  std::map<tcp::TargetStream *, std::weak_ptr<tcp::TargetStream>> peers_;
  // Shared: several callers may Wait on one id (a retried DeregisterMem and
  // Finalize), and one may erase it while another still waits.
  std::map<uint64_t, std::shared_ptr<Pending>> waiting_;
  // Ids given up on (Finalize): a Wait on one is not a confirmation, unlike
  // a Wait on an id that is gone because it was confirmed.
  std::set<uint64_t> forgotten_;
};

}  // namespace hixl
