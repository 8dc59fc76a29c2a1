#include "transport/shm/shm_transport.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fork_fds.h"
#include "common/log.h"
#include "control/control_link.h"
#include "memory/registry.h"
#include "transport/shm/shared_file.h"
#include "transport/shm/shm_channel.h"
#include "transport/shm/socket_owner.h"
#include "wire/codec.h"

namespace hixl::shm {

void EncodePid(uint32_t pid, std::vector<uint8_t> *out) {
  wire::Writer w(out);
  w.U32(pid);
}

uint32_t DecodePid(const wire::Sections &sections, uint16_t wire_id) {
  const std::vector<uint8_t> *bytes = wire::FindSection(sections, wire_id);
  if (bytes == nullptr) return 0;
  wire::Reader r(bytes->data(), bytes->size());
  const uint32_t pid = r.U32();
  return r.ok() ? pid : 0;
}

Status ShmTransport::Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why) {
  std::unique_ptr<ShmTransport> t(new ShmTransport(env));
  const size_t n = env.io_workers != nullptr && !env.io_workers->empty() ? env.io_workers->size() : 1;
  for (size_t i = 0; i < n; ++i) {
    t->copy_workers_.push_back(std::make_unique<IoWorker>("hixl-copy" + std::to_string(i)));
    if (!t->copy_workers_.back()->Start()) {
      *why = "cannot start its copy threads";
      return FAILED;
    }
  }
  *out = std::move(t);
  return SUCCESS;
}

ShmTransport::~ShmTransport() { Stop(); }

void ShmTransport::Stop() {
  for (auto &w : copy_workers_) w->Stop();
}

Status ShmTransport::OnRegister(Region &region) {
  if (region.memory->wire_kind() != wire::MemKind::kHost || region.len < kSharedFileMinBytes) return SUCCESS;
  std::string why;
  SharedFile f = FindSharedFile(region.addr, region.len, &why);
  if (f.fd < 0) {
    HIXL_LOGD("RegisterMem 0x%zx+%zu: peers on this host copy with process_vm_*: %s",
              static_cast<size_t>(region.addr), region.len, why.c_str());
    return SUCCESS;
  }
  HIXL_LOGI("RegisterMem 0x%zx+%zu: lives in a sealed file (fd %d here, offset %llu): peers on this host map it",
            static_cast<size_t>(region.addr), region.len, f.fd, static_cast<unsigned long long>(f.offset));
  std::vector<uint8_t> section;
  EncodeSharedFile(f, &section);
  region.sections.push_back({kWireId, std::move(section)});
  // Our duplicate of the fd, so that its number names the file as long as
  // the region is registered; closed with the region (and in a fork's
  // child, like every fd we keep: fork_fds.h).
  const int fd = f.fd;
  region.transport_state.emplace_back(kWireId, std::shared_ptr<void>(nullptr, [fd](void *) { CloseKeptFd(fd); }));
  return SUCCESS;
}

bool ShmTransport::SameKernel(const wire::HostIdentity &other) const {
  return !host_.boot_id.empty() && other.boot_id == host_.boot_id && other.pid_ns == host_.pid_ns;
}

void ShmTransport::Offer(std::vector<uint8_t> *bytes) { EncodePid(static_cast<uint32_t>(getpid()), bytes); }

void ShmTransport::Answer(const PeerView &peer, TransportAnswer *answer) {
  // Only a peer on this host can copy into our memory without asking, and
  // only one that is the process it claims to be: anyone could claim our
  // host identity (it is in every HELLO_ACK) and then, never acknowledging a
  // REVOKE, hold every DeregisterMem for its limit. One whose claim cannot
  // be checked is not told our pid, so it uses another transport, and is
  // waited for by revocations only as such.
  const uint32_t pid = DecodePid(*peer.sections);
  if (pid == 0 || !SameKernel(peer.host)) return;
  std::string why;
  if (!PeerHoldsSocket(peer.control_fd, static_cast<pid_t>(pid), &why)) {
    HIXL_LOGW_RL("serving %s: it claims to be pid %u on this host, which could not be confirmed (%s); it gets no "
              "direct copies",
              peer.name.c_str(), pid, why.c_str());
    return;
  }
  EncodePid(static_cast<uint32_t>(getpid()), &answer->bytes);
  answer->direct = true;
}

bool ShmTransport::CanReach(const PeerView &peer, MemKinds kinds, std::string *why) {
  if (kinds & ~kHostOnly) {
    // The peer takes no part in our copies: nobody would stage them.
    *why = "the peer has device memory registered, and process_vm_writev reaches host memory only";
    return false;
  }
  if (!SameKernel(peer.host)) {
    *why = "it runs on another host";
    return false;
  }
  if (DecodePid(*peer.sections) == 0) {
    *why = "the target offers no direct copies (its protocol_desc leaves out shm, or it could not confirm which "
           "process we are)";
    return false;
  }
  return true;
}

Status ShmTransport::Connect(const PeerView &peer, const LinkSetup &link, Deadline, std::unique_ptr<Channel> *out,
                             std::string *why) {
  // The pid is the target's word: it must also hold the far end of the
  // socket we dialed, or a local impostor could name another process of
  // ours for us to write into.
  const auto pid = static_cast<pid_t>(DecodePid(*peer.sections));
  // Opened before the proof: it then refers to the process proven, even if
  // that one exits and its pid is reused.
  const int pidfd = ShmChannel::OpenPidfd(pid);
  const bool no_pidfd = pidfd < 0 && errno != ENOSYS;  // ENOSYS: a kernel without pidfds (before 5.3)
  if (no_pidfd) {
    *why = std::string("no pidfd for pid ") + std::to_string(pid) + ": " + std::strerror(errno);
  } else if (!ShmChannel::Probe(pid, why)) {
    *why = "the kernel refuses cross-process copies (" + *why + ")";
  } else if (!PeerHoldsSocket(peer.control_fd, pid, why)) {
    *why = "the target names pid " + std::to_string(pid) + ", which could not be confirmed: " + *why;
  } else if (ShmChannel::Exited(pidfd)) {
    *why = "the target (pid " + std::to_string(pid) + ") exited";
  } else {
    // The channel asks the control link whether the target is still there.
    ControlLink *control = link.control;
    *out = std::make_unique<ShmChannel>(
        pid, pidfd, link.regions, [control] { return !control->broken(); }, &copy_workers_);
    HIXL_LOGI("link to %s: shm to pid %d on this host", peer.name.c_str(), static_cast<int>(pid));
    return SUCCESS;
  }
  CloseKeptFd(pidfd);
  return FAILED;
}

}  // namespace hixl::shm
