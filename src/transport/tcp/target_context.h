// target_context.h: what a target-side stream needs from its engine.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hixl/hixl_types.h"
#include "memory/registry.h"
#include "wire/messages.h"

namespace hixl::tcp {

class TargetStream;

class TargetContext {
 public:
  virtual ~TargetContext() = default;
  // The regions peers may read and write, as of now.
  virtual std::shared_ptr<const RegionTable> Regions() = 0;
  virtual std::vector<wire::RegionInfo> ExportRegions() = 0;
  // Judges a HELLO: SUCCESS and a filled `ack`, or a refusal with ack->reason.
  virtual Status OnHello(const wire::Hello &hello, wire::HelloAck *ack) = 0;
  // A notify arrived on link `link_key`: SUCCESS or NOTIFY_FAILED.
  // `peer`: its address ("ip:port" or "[ip]:port").
  virtual Status OnNotify(uint64_t link_key, const std::string &peer, wire::Notify &&notify) = 0;
  // The first stream of a link is being handshaken (before OnHello) /
  // closed. Regions are revoked at peers through these streams. Returns
  // whether the peer may copy into our memory itself (a proven process of
  // this host); if not, the HELLO_ACK names no pid.
  virtual bool OnControlStream(const std::shared_ptr<TargetStream> &stream, const wire::Hello &hello) = 0;
  virtual void OnControlStreamClosed(TargetStream *stream) = 0;
  // Its peer says it will not copy directly (NO_DIRECT): later revocations
  // need not wait for it as for one that does.
  virtual void OnNoDirect(TargetStream *stream) = 0;
  // The peer of `stream` has forgotten the region of revocation `id` (or
  // closed its end of the stream, which is as good; see Revocation).
  virtual void OnRevokeAck(uint64_t id, TargetStream *stream) = 0;
};

}  // namespace hixl::tcp
