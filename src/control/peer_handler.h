// peer_handler.h: the target's side of links, as the engine sees it. Streams
// accepted on the engine's port (transport/tcp: TargetStream) serve WRITE and
// READ frames themselves, against the engine's registered regions; for the
// rest they ask the engine's PeerHandler. A link's control stream is a
// ControlPeer to the engine: revocations reach the peer through it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "auth/authenticator.h"
#include "common/io_worker.h"
#include "hixl/hixl_types.h"
#include "memory/registry.h"
#include "wire/messages.h"

namespace hixl {

class ControlPeer {
 public:
  virtual ~ControlPeer() = default;
  // The worker thread the stream belongs to: the calls below run there.
  virtual IoWorker *worker() const = 0;
  // Asks the peer to forget `region`; the peer answers with `id`
  // (PeerHandler::OnRevokeAck). If the stream is or becomes closed first,
  // OnRevokeAck(id, this) is called anyway.
  virtual void PushRevoke(uint64_t id, const wire::RegionInfo &region) = 0;
  // Hangs up if revocation `id` is still unacknowledged.
  virtual void HangUpIfRevokePending(uint64_t id) = 0;
};

class PeerHandler {
 public:
  virtual ~PeerHandler() = default;
  // The engine's key, or nullptr (no key: peers prove nothing). With one,
  // every stream's HELLO must carry an auth section, and OnHello is called
  // only once the peer has proven it holds the key.
  virtual const auth::Authenticator *authenticator() const = 0;
  // The regions peers may read and write, as of now.
  virtual std::shared_ptr<const RegionTable> Regions() = 0;
  // Judges a HELLO: SUCCESS and a filled `ack`, or a refusal with
  // ack->reason. For a link's control stream `control` is that stream (it
  // is counted among the peers to revoke from before it gets the table) and
  // the transports answer the peer's offers; *direct then tells whether the
  // peer may reach our memory without our checks (see TransportAnswer).
  // `fd`: the stream's socket.
  virtual Status OnHello(const wire::Hello &hello, const std::shared_ptr<ControlPeer> &control, int fd,
                         wire::HelloAck *ack, bool *direct) = 0;
  // The peer chose `transport` for its data (USING): whether it now reaches
  // our memory without our checks.
  virtual bool OnUsing(ControlPeer *control, const std::string &who, uint16_t transport) = 0;
  // A notify arrived on link `link_key`: SUCCESS or NOTIFY_FAILED.
  // `peer`: its address ("ip:port" or "[ip]:port").
  virtual Status OnNotify(uint64_t link_key, const std::string &peer, wire::Notify &&notify) = 0;
  // The control stream has closed.
  virtual void OnControlClosed(ControlPeer *control) = 0;
  // The peer of `control` has forgotten the region of revocation `id` (or
  // closed its end of the stream, which is as good; see Revocation).
  virtual void OnRevokeAck(uint64_t id, ControlPeer *control) = 0;
};

}  // namespace hixl
