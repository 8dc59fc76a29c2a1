// memory.h: one registration: a range mapped for remote access
// (ucp_mem_map of existing memory) and its packed remote key.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

class Context;

class Memory {
 public:
  // Progress thread only.
  // `access`: HIXL_UCX_REMOTE_* bits (READ at least).
  static hixl_ucx_status_t Map(Context *ctx, void *addr, size_t len, hixl_ucx_mem_kind_t kind, unsigned access,
                               std::unique_ptr<Memory> *out);
  void Unmap();

  Context *context() const { return ctx_; }
  // Constant after Map: any thread.
  const std::vector<uint8_t> &rkey() const { return rkey_; }

 private:
  explicit Memory(Context *ctx) : ctx_(ctx) {}
  Context *const ctx_;
  ucp_mem_h memh_ = nullptr;  // progress thread only
  std::vector<uint8_t> rkey_;
};

}  // namespace hixl::ucx_plugin
