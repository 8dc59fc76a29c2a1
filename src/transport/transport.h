// transport.h: what a transport is to the engine. A link is a control
// connection (the control/ layer: handshake, region tables, notifies,
// revocations) plus one data Channel that a transport made. A transport
// lives in a folder of its own and is listed once, in the registry the
// engine builds (engine/transports.cc); docs/architecture.md says how to add
// one.
//
// Its life with an engine:
// - Created when the engine starts (if protocol_desc allows it), with the
//   engine's TransportEnv; Stop() when the engine finalizes, after every
//   link has closed.
// - Registration: OnRegister runs for every region before any table holds
//   it (a transport that needs keys makes them and attaches them to the
//   region's table entry); OnDeregister once no peer or batch can use it.
// - Handshake: as an initiator it Offers its part of HELLO; as a target it
//   Answers each peer's HELLO on the link's control stream.
// - Choice: the initiating engine asks the transports, in protocol_desc order
//   (or by rank()), whether they CanReach the peer, and the first that can
//   Connects the link's channel. Every transport skipped is logged, with why.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/address.h"
#include "common/deadline.h"
#include "common/io_worker.h"
#include "hixl/hixl_types.h"
#include "transport/channel.h"
#include "wire/messages.h"

namespace hixl::auth {
class Authenticator;
}

namespace hixl {

class ControlLink;
class RemoteRegions;
struct Region;

// What an engine gives its transports.
struct TransportEnv {
  std::string local_name;  // our engine's address
  wire::HostIdentity host;
  uint32_t heartbeat_ms = 0;
  // The engine's event loops (a transport may add its fds to them).
  const std::vector<std::unique_ptr<IoWorker>> *io_workers = nullptr;
  // GlobalResourceConfig fields "<transport name>.<key>", by key (JSON
  // values as text): the transport checks its own.
  std::map<std::string, std::string> config;
  // Dialing and connecting give up soon after this turns true (Finalize).
  const std::atomic<bool> *cancel = nullptr;
  // The engine's key (nullptr: none): streams a transport dials to the
  // engine's port shake hands with it (tcp::LinkParams::auth).
  std::shared_ptr<const auth::Authenticator> auth;
  // protocol_desc named this transport (by any of its names): a transport
  // that is chosen by default only where it pays off (ucx: an RDMA device)
  // runs anyway when asked for.
  bool requested = false;
  // Initialize's RdmaTrafficClass and RdmaServiceLevel (HIXL's defaults
  // when not given), for transports that reach RDMA devices.
  int rdma_traffic_class = -1;
  int rdma_service_level = -1;
};

// What the handshake told about the peer.
struct PeerView {
  std::string name;           // its engine address, for logs
  wire::HostIdentity host;    // where it runs
  const wire::Sections *sections = nullptr;  // its transports' parts: offers (we serve) or answers (we connect)
  int control_fd = -1;        // the socket of the link's control stream
};

// A link being made, for Connect.
struct LinkSetup {
  EngineAddress remote;
  uint64_t link_nonce = 0;    // the link's id in every HELLO
  RemoteRegions *regions = nullptr;  // the peer's table: direct copies check it under a Hold
  ControlLink *control = nullptr;    // the link's control connection; outlives the channel
};

// A transport's answer to one peer's HELLO.
struct TransportAnswer {
  std::vector<uint8_t> bytes;  // its section of HELLO_ACK (none when empty)
  // The peer may reach our memory without our checks (it copies into it
  // itself): DeregisterMem must hear from it before it returns.
  bool direct = false;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Its name in protocol_desc and logs, and its sections' id on the wire.
  virtual const char *name() const = 0;
  virtual uint16_t wire_id() const = 0;

  // Initiator: its part of HELLO (none when left empty).
  virtual void Offer(std::vector<uint8_t> *bytes) { (void)bytes; }
  // Target: its answer to a peer's HELLO on a link's control stream.
  virtual void Answer(const PeerView &peer, TransportAnswer *answer) {
    (void)peer;
    (void)answer;
  }
  // Initiator, after the handshake: whether it can reach the peer (whose
  // answers are in peer.sections) for the memory kinds its region table
  // holds (`kinds`); if not, why. Our own memory of a kind its channel does
  // not take (Channel::local_kinds) the engine stages itself.
  virtual bool CanReach(const PeerView &peer, MemKinds kinds, std::string *why) = 0;
  // Makes the link's data channel before `deadline`. SUCCESS, or FAILED /
  // TIMEOUT with the reason in *why (the engine then tries the next one).
  virtual Status Connect(const PeerView &peer, const LinkSetup &link, Deadline deadline,
                         std::unique_ptr<Channel> *out, std::string *why) = 0;

  // Registration hooks: attach to region.sections / transport_state what
  // peers and this transport need (keys). Before any table holds the region.
  virtual Status OnRegister(Region &region) {
    (void)region;
    return SUCCESS;
  }
  // Once no peer or batch of ours can use the region any more.
  virtual void OnDeregister(const Region &region) { (void)region; }
  // The engine is finalizing; every link is closed.
  virtual void Stop() {}
};

}  // namespace hixl
