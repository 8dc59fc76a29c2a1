#include "transport/ucx/plugin/batch.h"

#include "transport/ucx/plugin/endpoint.h"
#include "transport/ucx/plugin/plugin_log.h"
#include "transport/ucx/plugin/status.h"

namespace hixl::ucx_plugin {

hixl_ucx_status_t MergePieces(const Endpoint *ep, const hixl_ucx_piece_t *pieces, size_t count,
                              std::vector<Op> *ops, uint64_t *bytes) {
  ops->clear();
  *bytes = 0;
  if ((count > 0 && pieces == nullptr) || count >= OpRef::kFlush) {
    UCXP_LOGE("a batch of %zu pieces without the pieces, or too many", count);
    return HIXL_UCX_ERR_INVALID;
  }
  ops->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const hixl_ucx_piece_t &p = pieces[i];
    if (p.len == 0 || p.local_addr + p.len < p.local_addr || p.remote_addr + p.len < p.remote_addr) {
      UCXP_LOGE("batch piece %zu (local 0x%llx, remote 0x%llx, len %llu) is empty or wraps", i,
                static_cast<unsigned long long>(p.local_addr), static_cast<unsigned long long>(p.remote_addr),
                static_cast<unsigned long long>(p.len));
      return HIXL_UCX_ERR_INVALID;
    }
    auto *rkey = reinterpret_cast<Rkey *>(p.rkey);
    if (rkey == nullptr || rkey->ep != ep) {
      UCXP_LOGE("batch piece %zu names a key that was not unpacked on this endpoint", i);
      return HIXL_UCX_ERR_INVALID;
    }
    *bytes += p.len;
    if (!ops->empty()) {
      Op &last = ops->back();
      if (last.rkey == rkey && last.local + last.len == p.local_addr && last.remote + last.len == p.remote_addr) {
        last.len += p.len;
        continue;
      }
    }
    ops->push_back({p.local_addr, p.remote_addr, p.len, rkey});
  }
  return HIXL_UCX_OK;
}

void Batch::Fail(ucs_status_t st) {
  if (status != HIXL_UCX_OK) return;
  status = FromUcs(st);
  if (status == HIXL_UCX_OK) status = HIXL_UCX_ERR_INTERNAL;
  why = ucs_status_string(st);
}

}  // namespace hixl::ucx_plugin
