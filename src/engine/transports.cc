// transports.cc: the transports of this build, listed once. A new transport
// is a folder under src/transport/ and one entry here (see "How to add a
// transport" in docs/architecture.md).
#include "transport/cuda_ipc/cuda_ipc_transport.h"
#include "transport/registry.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/ucx/ucx_transport.h"

namespace hixl {

void BuildTransports(TransportRegistry *registry) {
  // Same host, GPU memory: HIXL calls its same-node device path hccs.
  registry->Add({"cuda_ipc", {"hccs"}, {"device"}, 5, cuda_ipc::CudaIpcTransport::Create});
  registry->Add({"shm", {}, {"host"}, 10, shm::ShmTransport::Create});
  // Its plug-in is loaded at run time; without it (or UCX, or, unless
  // protocol_desc names it, an RDMA device) it is left out.
  registry->Add({"ucx", {"rdma", "roce"}, {"host", "device"}, 20, ucx::UcxTransport::Create});
  registry->Add({"tcp", {}, {"host"}, 100, tcp::TcpTransport::Create});
}

}  // namespace hixl
