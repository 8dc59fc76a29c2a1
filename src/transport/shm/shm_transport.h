// shm_transport.h: the transport to engines on this host (same kernel and
// PID namespace; network namespaces do not matter). The initiator copies
// straight into and out of the target's registered memory with
// process_vm_writev / process_vm_readv (ShmChannel); the target's CPU does
// nothing.
//
// Handshake: each side names its pid in its section (HELLO: the initiator's,
// HELLO_ACK: the target's) and each proves the other's claim before it
// relies on it: the pid must run as our user and hold the far end of the
// link's control stream (socket_owner.h). A target answers its pid only to a
// peer so proven (which may then copy into its memory: a direct peer, that
// DeregisterMem waits for); the initiator proves the target's pid before
// its first copy. Either side's protocol_desc leaving out shm means no pid
// is named, and the link uses another transport.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/io_worker.h"
#include "transport/transport.h"

namespace hixl::shm {

constexpr uint16_t kWireId = 2;

// Its section: the pid (u32) of the engine's process.
void EncodePid(uint32_t pid, std::vector<uint8_t> *out);
// The pid in `sections`' shm section (or another transport's that offers
// the same, cuda_ipc); 0 if none (or malformed).
uint32_t DecodePid(const wire::Sections &sections, uint16_t wire_id = kWireId);

class ShmTransport final : public Transport {
 public:
  static Status Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why);
  ~ShmTransport() override;

  const char *name() const override { return "shm"; }
  uint16_t wire_id() const override { return kWireId; }
  void Offer(std::vector<uint8_t> *bytes) override;
  void Answer(const PeerView &peer, TransportAnswer *answer) override;
  bool CanReach(const PeerView &peer, MemKinds kinds, std::string *why) override;
  Status Connect(const PeerView &peer, const LinkSetup &link, Deadline deadline, std::unique_ptr<Channel> *out,
                 std::string *why) override;
  // A host region that lives in a sealed memfd (shared_file.h) gets a
  // section naming the file, which a peer on this host maps; the fd named
  // stays open until the region is gone.
  Status OnRegister(Region &region) override;
  void Stop() override;

 private:
  explicit ShmTransport(const TransportEnv &env) : host_(env.host) {}
  bool SameKernel(const wire::HostIdentity &other) const;

  const wire::HostIdentity host_;
  // Copies run on threads of their own, as many as the engine's I/O
  // threads, apart from those: a long copy on an I/O thread would leave its
  // sockets unread (and heartbeats unanswered: the peer would look dead).
  std::vector<std::unique_ptr<IoWorker>> copy_workers_;
};

}  // namespace hixl::shm
