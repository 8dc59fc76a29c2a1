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
  virtual Status OnNotify(uint64_t link_key, wire::Notify &&notify) = 0;
  // The first stream of a link is being handshaken (before OnHello) /
  // closed. Regions are revoked at peers through these streams. Returns
  // whether the peer may copy into our memory itself (a proven process of
  // this host); if not, the HELLO_ACK names no pid.
  virtual bool OnControlStream(const std::shared_ptr<TargetStream> &stream, const wire::Hello &hello) = 0;
  // Also when its peer says it will not copy directly (NO_DIRECT): later
  // revocations skip it.
  virtual void OnControlStreamClosed(TargetStream *stream) = 0;
  // The peer has forgotten the region of revocation `id` (or closed its end
  // of the stream, which is as good; see Revocation).
  virtual void OnRevokeAck(uint64_t id) = 0;
};

}  // namespace hixl::tcp
