#include "transport/tcp/tcp_transport.h"

#include "common/log.h"
#include "transport/registry.h"
#include "transport/tcp/tcp_link.h"

namespace hixl::tcp {

Status TcpTransport::Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why) {
  std::unique_ptr<TcpTransport> t(new TcpTransport(env));
  Status s = TransportConfigUint(env, "tcp", "streams_per_link", 1, 16, &t->streams_, why);
  if (s != SUCCESS) return s;
  *out = std::move(t);
  return SUCCESS;
}

bool TcpTransport::CanReach(const PeerView &, MemKinds kinds, std::string *why) {
  // Device memory is staged through host buffers on both sides: the target
  // streams copy it through the CUDA driver, and the engine's relay ours.
  if (kinds & ~(kHostOnly | MemKindBit(wire::MemKind::kDevice))) {
    *why = "it moves host and device memory only";
    return false;
  }
  return true;
}

Status TcpTransport::Connect(const PeerView &peer, const LinkSetup &link, Deadline deadline,
                             std::unique_ptr<Channel> *out, std::string *why) {
  LinkParams params;
  params.local_name = env_.local_name;
  params.remote = link.remote;
  params.link_nonce = link.link_nonce;
  params.first_index = 1;
  params.count = static_cast<uint16_t>(streams_);
  params.stream_total = static_cast<uint16_t>(streams_ + 1);
  params.heartbeat_ms = env_.heartbeat_ms;
  params.host = env_.host;
  params.cancel = env_.cancel;
  params.auth = env_.auth;
  std::unique_ptr<TcpLink> tcp;
  wire::HelloAck ack;
  Status s = TcpLink::Open(params, *env_.io_workers, deadline, &tcp, &ack, why);
  if (s != SUCCESS) return s;
  HIXL_LOGI("link to %s: tcp, %u streams", peer.name.c_str(), streams_);
  *out = std::move(tcp);
  return SUCCESS;
}

}  // namespace hixl::tcp
