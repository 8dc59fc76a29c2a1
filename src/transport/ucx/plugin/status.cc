#include "transport/ucx/plugin/status.h"

namespace hixl::ucx_plugin {

hixl_ucx_status_t FromUcs(ucs_status_t status) {
  if (status >= UCS_ERR_LAST_LINK_FAILURE && status <= UCS_ERR_FIRST_LINK_FAILURE) return HIXL_UCX_ERR_PEER_FAILED;
  if (status >= UCS_ERR_LAST_ENDPOINT_FAILURE && status <= UCS_ERR_FIRST_ENDPOINT_FAILURE) {
    return HIXL_UCX_ERR_PEER_FAILED;
  }
  switch (status) {
    case UCS_OK:
      return HIXL_UCX_OK;
    case UCS_ERR_NO_MEMORY:
      return HIXL_UCX_ERR_NO_MEMORY;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NOT_IMPLEMENTED:
      return HIXL_UCX_ERR_UNSUPPORTED;
    case UCS_ERR_NO_DEVICE:
      return HIXL_UCX_ERR_NO_DEVICE;
    case UCS_ERR_UNREACHABLE:
      return HIXL_UCX_ERR_UNREACHABLE;
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_CONNECTION_RESET:
      return HIXL_UCX_ERR_PEER_FAILED;
    case UCS_ERR_CANCELED:
      return HIXL_UCX_ERR_CANCELED;
    case UCS_ERR_TIMED_OUT:
      return HIXL_UCX_ERR_TIMED_OUT;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
      return HIXL_UCX_ERR_INVALID;
    default:
      return HIXL_UCX_ERR_INTERNAL;
  }
}

const char *StatusName(hixl_ucx_status_t status) {
  switch (status) {
    case HIXL_UCX_OK:
      return "OK";
    case HIXL_UCX_ERR_INVALID:
      return "INVALID";
    case HIXL_UCX_ERR_NO_MEMORY:
      return "NO_MEMORY";
    case HIXL_UCX_ERR_UNSUPPORTED:
      return "UNSUPPORTED";
    case HIXL_UCX_ERR_NO_DEVICE:
      return "NO_DEVICE";
    case HIXL_UCX_ERR_UNREACHABLE:
      return "UNREACHABLE";
    case HIXL_UCX_ERR_PEER_FAILED:
      return "PEER_FAILED";
    case HIXL_UCX_ERR_CANCELED:
      return "CANCELED";
    case HIXL_UCX_ERR_TIMED_OUT:
      return "TIMED_OUT";
    case HIXL_UCX_ERR_INTERNAL:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

}  // namespace hixl::ucx_plugin
