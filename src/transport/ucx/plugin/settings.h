// settings.h: the UCX configuration a context is made with: hixl's settings
// applied over UCX's own (read from the environment), except that a
// variable the user set in the environment always wins.
#pragma once

#include <ucp/api/ucp.h>

#include <string>
#include <vector>

#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

struct UcxSetting {
  std::string name;  // without "UCX_"
  std::string value;
};

// The settings to apply, in order: tls, net_devices, the IB traffic class
// and service level (only when `rdma_present`: UCX warns about settings no
// transport reads), MM_ERROR_HANDLING=y when shared memory may be used (on
// UCX 1.13 its transports are left out of endpoints with peer error
// handling without it), then params.settings. Leaves out each setting whose
// UCX_<NAME> is in the environment. INVALID (logged) for a bad value.
hixl_ucx_status_t PlanSettings(const hixl_ucx_context_params_t &params, bool rdma_present,
                               std::vector<UcxSetting> *plan);
// True when the traffic class or service level asks for an RDMA device
// check (PlanSettings needs its answer).
bool WantsRdmaSettings(const hixl_ucx_context_params_t &params);
// True when a UCX_TLS value may select a shared-memory transport.
bool TlsMayUseSharedMemory(const std::string &tls);
// UCX's configuration from the environment with `plan` applied.
hixl_ucx_status_t MakeConfig(const std::vector<UcxSetting> &plan, ucp_config_t **out);

}  // namespace hixl::ucx_plugin
