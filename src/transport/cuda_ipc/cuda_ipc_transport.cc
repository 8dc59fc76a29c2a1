#include "transport/cuda_ipc/cuda_ipc_transport.h"

#include <unistd.h>

#include <cinttypes>

#include "common/log.h"
#include "control/control_link.h"
#include "device/cuda/cuda_driver.h"
#include "memory/registry.h"
#include "transport/cuda_ipc/cuda_ipc_channel.h"
#include "transport/cuda_ipc/ipc_section.h"
#include "transport/registry.h"
#include "transport/shm/shm_transport.h"
#include "transport/shm/socket_owner.h"

namespace hixl::cuda_ipc {
namespace {

constexpr uint8_t kAnswerVersion = 1;

}  // namespace

// Cheap, and loads no CUDA: a host-only engine never needs it. The driver
// is asked for only where device memory is involved (then loaded already).
Status CudaIpcTransport::Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why) {
  std::unique_ptr<CudaIpcTransport> t(new CudaIpcTransport(env));
  Status s = TransportConfigUint(env, "cuda_ipc", "device", 0, 1023, &t->device_, why);
  if (s != SUCCESS) return s;
  *out = std::move(t);
  return SUCCESS;
}

uint16_t CudaIpcTransport::wire_id() const { return kWireId; }

bool CudaIpcTransport::SameKernel(const wire::HostIdentity &other) const {
  return !env_.host.boot_id.empty() && other.boot_id == env_.host.boot_id && other.pid_ns == env_.host.pid_ns;
}

void CudaIpcTransport::Offer(std::vector<uint8_t> *bytes) {
  shm::EncodePid(static_cast<uint32_t>(getpid()), bytes);  // (as shm offers it)
}

void CudaIpcTransport::Answer(const PeerView &peer, TransportAnswer *answer) {
  // A peer that opens our allocations reaches them without our checks:
  // only one proven to be the process on this host it claims to be (see
  // shm), so that DeregisterMem waits for it and for no impostor.
  const uint32_t pid = shm::DecodePid(*peer.sections, kWireId);
  if (pid == 0 || !SameKernel(peer.host) || cuda::DriverIfLoaded() == nullptr) return;
  std::string why;
  if (!shm::PeerHoldsSocket(peer.control_fd, static_cast<pid_t>(pid), &why)) {
    HIXL_LOGW_RL("serving %s: it claims to be pid %u on this host, which could not be confirmed (%s); no cuda_ipc",
                 peer.name.c_str(), pid, why.c_str());
    return;
  }
  answer->bytes = {kAnswerVersion};
  answer->direct = true;
}

bool CudaIpcTransport::CanReach(const PeerView &peer, MemKinds kinds, std::string *why) {
  if (kinds != MemKindBit(wire::MemKind::kDevice)) {
    *why = "it reaches the peer's device memory only, and the peer has host memory registered (or none)";
    return false;
  }
  if (!SameKernel(peer.host)) {
    *why = "it runs on another host";
    return false;
  }
  std::string cause;
  if (cuda::GetDriver(&cause) == nullptr) {
    *why = "no CUDA here: " + cause;
    return false;
  }
  const std::vector<uint8_t> *answer = wire::FindSection(*peer.sections, kWireId);
  if (answer == nullptr || answer->empty() || (*answer)[0] != kAnswerVersion) {
    *why = "the target does not offer it (no CUDA driver there, its protocol_desc leaves it out, or it could not "
           "confirm which process we are)";
    return false;
  }
  return true;
}

Status CudaIpcTransport::Connect(const PeerView &peer, const LinkSetup &link, Deadline, std::unique_ptr<Channel> *out,
                                 std::string *why) {
  cuda::Driver *driver = cuda::GetDriver(why);
  if (driver == nullptr) return FAILED;
  cuda::Stream stream = nullptr;
  if (!driver->StreamCreate(static_cast<int>(device_), &stream, why)) return FAILED;
  ControlLink *control = link.control;
  *out = std::make_unique<CudaIpcChannel>(driver, static_cast<int>(device_), stream, link.regions,
                                          [control] { return !control->broken(); });
  HIXL_LOGI("link to %s: cuda_ipc on device %u", peer.name.c_str(), device_);
  return SUCCESS;
}

Status CudaIpcTransport::OnRegister(Region &region) {
  if (region.memory->wire_kind() != wire::MemKind::kDevice) return SUCCESS;
  const MemPlacement &at = region.placement;
  if (!at.ipc_capable) {
    // (VMM memory needs shareable handles: not yet.) tcp stages it.
    HIXL_LOGI("RegisterMem 0x%" PRIxPTR "+%zu: its allocation has no legacy IPC handle (VMM memory?); peers on this "
              "host reach it through tcp",
              region.addr, region.len);
    return SUCCESS;
  }
  cuda::Driver *driver = cuda::GetDriver(nullptr);
  IpcSection s;
  std::string why;
  if (driver == nullptr || !driver->IpcExport(at.device, at.alloc_base, &s.handle, &why)) {
    HIXL_LOGW("RegisterMem 0x%" PRIxPTR "+%zu: no IPC handle for its allocation (%s); peers on this host reach it "
              "through tcp",
              region.addr, region.len, why.c_str());
    return SUCCESS;
  }
  s.alloc_base = at.alloc_base;
  s.alloc_len = at.alloc_len;
  wire::Section sec;
  sec.id = kWireId;
  EncodeSection(s, &sec.bytes);
  region.sections.push_back(std::move(sec));
  return SUCCESS;
}

}  // namespace hixl::cuda_ipc
