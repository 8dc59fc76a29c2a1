#include "transport/ucx/plugin/memory.h"

#include "transport/ucx/plugin/context.h"
#include "transport/ucx/plugin/plugin_log.h"
#include "transport/ucx/plugin/status.h"

namespace hixl::ucx_plugin {

hixl_ucx_status_t Memory::Map(Context *ctx, void *addr, size_t len, hixl_ucx_mem_kind_t kind, unsigned access,
                              std::unique_ptr<Memory> *out) {
  ucs_memory_type_t type = UCS_MEMORY_TYPE_HOST;
  if (kind == HIXL_UCX_MEM_CUDA) {
    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(ctx->ucp(), &attr) != UCS_OK || (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) == 0) {
      UCXP_LOGE("registering %zu bytes at %p: this UCX has no CUDA support", len, addr);
      return HIXL_UCX_ERR_UNSUPPORTED;
    }
    type = UCS_MEMORY_TYPE_CUDA;
  } else if (kind != HIXL_UCX_MEM_HOST) {
    UCXP_LOGE("registering %zu bytes at %p: unknown memory kind %d", len, addr, static_cast<int>(kind));
    return HIXL_UCX_ERR_INVALID;
  }
  std::unique_ptr<Memory> mem(new Memory(ctx));
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                  UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE | UCP_MEM_MAP_PARAM_FIELD_PROT;
  mp.address = addr;
  mp.length = len;
  mp.memory_type = type;
  // Memory this process may only read: mapped (pinned, over RDMA) for
  // reading only, and its key carries no remote write access.
  const bool writable = (access & HIXL_UCX_REMOTE_WRITE) != 0;
  mp.prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_REMOTE_READ |
            (writable ? UCP_MEM_MAP_PROT_LOCAL_WRITE | UCP_MEM_MAP_PROT_REMOTE_WRITE : 0);
  ucs_status_t st = ucp_mem_map(ctx->ucp(), &mp, &mem->memh_);
  if (st != UCS_OK) {
    UCXP_LOGE("mapping %zu bytes at %p for UCX failed: %s", len, addr, ucs_status_string(st));
    return FromUcs(st);
  }
  void *packed = nullptr;
  size_t packed_len = 0;
  st = ucp_rkey_pack(ctx->ucp(), mem->memh_, &packed, &packed_len);
  if (st != UCS_OK) {
    UCXP_LOGE("packing the UCX key of %zu bytes at %p failed: %s", len, addr, ucs_status_string(st));
    mem->Unmap();
    return FromUcs(st);
  }
  const auto *bytes = static_cast<const uint8_t *>(packed);
  mem->rkey_.assign(bytes, bytes + packed_len);
  ucp_rkey_buffer_release(packed);
  UCXP_LOGD("mapped %zu bytes at %p for UCX (%s): key of %zu bytes", len, addr,
            writable ? "remote read and write" : "remote read only", packed_len);
  *out = std::move(mem);
  return HIXL_UCX_OK;
}

void Memory::Unmap() {
  if (memh_ == nullptr) return;
  ucs_status_t st = ucp_mem_unmap(ctx_->ucp(), memh_);
  if (st != UCS_OK) UCXP_LOGE("unmapping a UCX registration failed: %s", ucs_status_string(st));
  memh_ = nullptr;
}

}  // namespace hixl::ucx_plugin
