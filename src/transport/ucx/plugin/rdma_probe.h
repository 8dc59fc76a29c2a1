// rdma_probe.h: does UCX see an RDMA-capable device (InfiniBand, RoCE, ...)?
// hixl picks the ucx transport by default only where it does: elsewhere UCX
// runs over tcp or shared memory, and hixl's own transports are faster.
#pragma once

#include <string>
#include <vector>

#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

// The names of the network devices UCX offers a transport other than tcp on
// (e.g. "mlx5_0:1"), each once.
hixl_ucx_status_t RdmaDevices(std::vector<std::string> *names);

}  // namespace hixl::ucx_plugin
