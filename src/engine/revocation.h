// revocation.h: DeregisterMem's reach into the peers that copy into this
// engine's memory themselves (shm). Every control stream of a peer on this
// host is told to forget the region, and DeregisterMem waits until each has
// acknowledged (or its stream closed), so that no byte lands in memory after
// it was deregistered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "transport/tcp/target_stream.h"
#include "wire/messages.h"

namespace hixl {

class Revocation {
 public:
  void AddPeer(const std::shared_ptr<tcp::TargetStream> &stream);
  void RemovePeer(tcp::TargetStream *stream);
  // Sends REVOKE to every peer and waits for their acknowledgements, up to
  // `limit`. Returns false (logged) when some peer did not answer in time.
  bool RevokeEverywhere(const wire::RegionInfo &region, std::chrono::milliseconds limit);
  void OnAck(uint64_t id);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  std::map<tcp::TargetStream *, std::weak_ptr<tcp::TargetStream>> peers_;
  std::map<uint64_t, size_t> waiting_;  // revocation id -> acks still due
};

}  // namespace hixl
