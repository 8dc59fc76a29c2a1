// cuda_ipc_transport.h: same-host GPU memory through CUDA IPC (legacy IPC
// handles of each allocation's base). HIXL's name for its same-node device
// path, protocol_desc "hccs:device", selects it too.
//
// - Registration (target): a device region's table entry carries the IPC
//   handle of its allocation (ipc_section.h).
// - Handshake: the initiator offers its pid; a target on the same host that
//   has a CUDA driver and proves the pid holds our socket (as shm does)
//   answers, and counts the peer as direct: DeregisterMem waits for its
//   REVOKE_ACK, sent once its mappings of that allocation are closed.
// - Choice: only for peers whose registered memory is all device memory
//   (it cannot reach host memory; tcp stages the rest).
#pragma once

#include <memory>
#include <string>

#include "transport/transport.h"

namespace hixl::cuda_ipc {

class CudaIpcTransport : public Transport {
 public:
  // Loads no CUDA (see CanReach); PARAM_INVALID for a bad cuda_ipc.device.
  static Status Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why);

  const char *name() const override { return "cuda_ipc"; }
  uint16_t wire_id() const override;
  void Offer(std::vector<uint8_t> *bytes) override;
  void Answer(const PeerView &peer, TransportAnswer *answer) override;
  bool CanReach(const PeerView &peer, MemKinds kinds, std::string *why) override;
  Status Connect(const PeerView &peer, const LinkSetup &link, Deadline deadline, std::unique_ptr<Channel> *out,
                 std::string *why) override;
  Status OnRegister(Region &region) override;

 private:
  explicit CudaIpcTransport(const TransportEnv &env) : env_(env) {}
  bool SameKernel(const wire::HostIdentity &other) const;

  const TransportEnv env_;
  uint32_t device_ = 0;  // cuda_ipc.device: the GPU whose stream copies
};

}  // namespace hixl::cuda_ipc
