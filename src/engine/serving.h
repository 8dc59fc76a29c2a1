// serving.h: the engine as a target: what its peers' streams ask of it
// (control/peer_handler.h). It judges handshakes (the dialed address, and
// every transport's answer to the peer's offers), counts each link's control
// stream among the peers that DeregisterMem revokes from, and takes notifies.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/address.h"
#include "common/mutex.h"
#include "control/peer_handler.h"
#include "engine/notify_inbox.h"
#include "engine/revocation.h"
#include "memory/registry.h"
#include "transport/transport.h"

namespace hixl {

class Serving final : public PeerHandler {
 public:
  // Everything given is the engine's and outlives this. `local` and `name`
  // are read only once the engine has started (before it listens).
  // `auth`: the engine's key, or nullptr (peers prove nothing).
  Serving(const EngineAddress &local, const std::string &name, const wire::HostIdentity &host, Registry &registry,
          Revocation &revocation, NotifyInbox &inbox, const std::vector<std::unique_ptr<Transport>> &transports,
          const std::atomic<bool> &stopping, const auth::Authenticator *auth = nullptr)
      : local_(local),
        name_(name),
        host_(host),
        registry_(registry),
        revocation_(revocation),
        inbox_(inbox),
        transports_(transports),
        stopping_(stopping),
        auth_(auth) {}

  const auth::Authenticator *authenticator() const override { return auth_; }
  std::shared_ptr<const RegionTable> Regions() override { return registry_.Snapshot(); }
  Status OnHello(const wire::Hello &hello, const std::shared_ptr<ControlPeer> &control, int fd, wire::HelloAck *ack,
                 bool *direct) override;
  bool OnUsing(ControlPeer *control, const std::string &who, uint16_t transport) override;
  Status OnNotify(uint64_t link_key, const std::string &peer, wire::Notify &&notify) override;
  void OnControlClosed(ControlPeer *control) override;
  void OnRevokeAck(uint64_t id, ControlPeer *control) override { revocation_.OnAck(id, control); }

 private:
  const EngineAddress &local_;
  const std::string &name_;
  const wire::HostIdentity &host_;
  Registry &registry_;
  Revocation &revocation_;
  NotifyInbox &inbox_;
  const std::vector<std::unique_ptr<Transport>> &transports_;
  const std::atomic<bool> &stopping_;
  const auth::Authenticator *const auth_;  // the engine's key, or nullptr

  // Guards direct_via_ only (the I/O threads of many peers handshake at
  // once); not held while the revocation's lock is taken.
  Mutex mu_;
  // The transports (wire ids) that answered a control peer as one reaching
  // our memory itself (see TransportAnswer::direct).
  std::map<ControlPeer *, std::vector<uint16_t>> direct_via_ GUARDED_BY(mu_);
};

}  // namespace hixl
