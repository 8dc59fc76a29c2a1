// status.h: UCX's status codes in the plug-in ABI's terms.
#pragma once

#include <ucs/type/status.h>

#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

hixl_ucx_status_t FromUcs(ucs_status_t status);
const char *StatusName(hixl_ucx_status_t status);

}  // namespace hixl::ucx_plugin
