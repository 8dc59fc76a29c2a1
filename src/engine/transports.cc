// transports.cc: the transports of this build, listed once. A new transport
// is a folder under src/transport/ and one entry here (see "How to add a
// transport" in docs/architecture.md).
#include "transport/cuda_ipc/cuda_ipc_transport.h"
#include "transport/registry.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace hixl {
namespace {

// Names protocol_desc accepts for transports this build does not have: a
// link restricted to them fails to connect, with the reason.
Status NotBuilt(const char *what, std::string *why) {
  *why = std::string(what) + " is not part of this build";
  return UNSUPPORTED;
}

}  // namespace

void BuildTransports(TransportRegistry *registry) {
  // Same host, GPU memory: HIXL calls its same-node device path hccs.
  registry->Add({"cuda_ipc", {"hccs"}, {"device"}, 5, cuda_ipc::CudaIpcTransport::Create});
  registry->Add({"shm", {}, {"host"}, 10, shm::ShmTransport::Create});
  registry->Add({"ucx", {"rdma"}, {"host", "device"}, 20,
                 [](const TransportEnv &, std::unique_ptr<Transport> *, std::string *why) {
                   return NotBuilt("the UCX transport", why);
                 }});
  registry->Add({"tcp", {}, {"host"}, 100, tcp::TcpTransport::Create});
}

}  // namespace hixl
