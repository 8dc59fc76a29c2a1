// entry.cc: the plug-in's one exported symbol and the C functions of its
// table, each a thin shell over Context, Endpoint and Memory.
#include <ucp/api/ucp.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "transport/ucx/plugin/batch.h"
#include "transport/ucx/plugin/context.h"
#include "transport/ucx/plugin/endpoint.h"
#include "transport/ucx/plugin/memory.h"
#include "transport/ucx/plugin/plugin_log.h"
#include "transport/ucx/plugin/rdma_probe.h"
#include "transport/ucx/plugin/status.h"
#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {
namespace {

static_assert(std::string_view(HIXL_UCX_ENTRY_SYMBOL) == "hixl_ucx_plugin_entry");

Context *Ctx(hixl_ucx_context_t *c) { return reinterpret_cast<Context *>(c); }
Endpoint *Ep(hixl_ucx_ep_t *e) { return reinterpret_cast<Endpoint *>(e); }
Memory *Mem(hixl_ucx_mem_t *m) { return reinterpret_cast<Memory *>(m); }
Rkey *Key(hixl_ucx_rkey_t *r) { return reinterpret_cast<Rkey *>(r); }

hixl_ucx_status_t Invalid(const char *what) {
  UCXP_LOGE("%s: a required argument is missing or out of range", what);
  return HIXL_UCX_ERR_INVALID;
}

// Copies `s` into buf[len], cut to fit, NUL-terminated.
void CopyOut(const std::string &s, char *buf, size_t len) {
  if (buf == nullptr || len == 0) return;
  size_t n = s.size() < len - 1 ? s.size() : len - 1;
  std::memcpy(buf, s.data(), n);
  buf[n] = '\0';
}

const char *Version() {
  static const std::string v =
      "hixl_ucx " + std::to_string(HIXL_UCX_ABI_VERSION) + " (UCX " + ucp_get_version_string() + ")";
  return v.c_str();
}

hixl_ucx_status_t ListRdmaDevices(char *names, size_t names_len, size_t *count) {
  if (count == nullptr) return Invalid("rdma_devices");
  std::vector<std::string> devices;
  hixl_ucx_status_t st = RdmaDevices(&devices);
  if (st != HIXL_UCX_OK) return st;
  std::string joined;
  for (const auto &d : devices) joined += (joined.empty() ? "" : ",") + d;
  CopyOut(joined, names, names_len);
  *count = devices.size();
  return HIXL_UCX_OK;
}

hixl_ucx_status_t ContextCreate(const hixl_ucx_context_params_t *params, hixl_ucx_context_t **out) {
  if (params == nullptr || out == nullptr) return Invalid("context_create");
  std::unique_ptr<Context> ctx;
  hixl_ucx_status_t st = Context::Create(*params, &ctx);
  if (st == HIXL_UCX_OK) *out = reinterpret_cast<hixl_ucx_context_t *>(ctx.release());
  return st;
}

hixl_ucx_status_t ContextDestroy(hixl_ucx_context_t *c) {
  if (c == nullptr) return Invalid("context_destroy");
  hixl_ucx_status_t st = Ctx(c)->Shutdown();
  if (st == HIXL_UCX_OK) delete Ctx(c);
  return st;
}

hixl_ucx_status_t WorkerAddress(hixl_ucx_context_t *c, const void **addr, size_t *len) {
  if (c == nullptr || addr == nullptr || len == nullptr) return Invalid("worker_address");
  *addr = Ctx(c)->address().data();
  *len = Ctx(c)->address().size();
  return HIXL_UCX_OK;
}

hixl_ucx_status_t EpCreate(hixl_ucx_context_t *c, const void *peer_addr, size_t len, hixl_ucx_ep_error_cb on_error,
                           void *user, hixl_ucx_ep_t **out) {
  if (c == nullptr || peer_addr == nullptr || len == 0 || out == nullptr) return Invalid("ep_create");
  Context *ctx = Ctx(c);
  auto ep = std::make_unique<Endpoint>(ctx, on_error, user);
  Endpoint *raw = ep.get();
  hixl_ucx_status_t st = ctx->Call("ep_create", [&] {
    hixl_ucx_status_t s = raw->Open(peer_addr, len);
    if (s == HIXL_UCX_OK) ctx->endpoints.emplace(raw, std::move(ep));
    return s;
  });
  if (st == HIXL_UCX_OK) *out = reinterpret_cast<hixl_ucx_ep_t *>(raw);
  return st;
}

hixl_ucx_status_t EpDestroy(hixl_ucx_ep_t *e, uint32_t flush_timeout_ms) {
  if (e == nullptr) return Invalid("ep_destroy");
  Endpoint *ep = Ep(e);
  Context *ctx = ep->context();
  return ctx->Call(
      "ep_destroy",
      [&] {
        hixl_ucx_status_t s = ep->Close(flush_timeout_ms);
        auto it = ctx->endpoints.find(ep);
        std::unique_ptr<Endpoint> owned = std::move(it->second);
        ctx->endpoints.erase(it);
        ctx->Retire(std::move(owned));
        return s;
      },
      ep, /*close_ep=*/true);
}

hixl_ucx_status_t EpDescribe(hixl_ucx_ep_t *e, char *buf, size_t len) {
  if (e == nullptr || buf == nullptr || len == 0) return Invalid("ep_describe");
  Endpoint *ep = Ep(e);
  std::string text;
  hixl_ucx_status_t st = ep->context()->Call(
      "ep_describe",
      [&] {
        text = ep->Describe();
        return HIXL_UCX_OK;
      },
      ep);
  if (st == HIXL_UCX_OK) CopyOut(text, buf, len);
  return st;
}

hixl_ucx_status_t EpStats(hixl_ucx_ep_t *e, hixl_ucx_ep_stats_t *out) {
  if (e == nullptr || out == nullptr) return Invalid("ep_stats");
  Ep(e)->Stats(out);
  return HIXL_UCX_OK;
}

hixl_ucx_status_t MemRegister(hixl_ucx_context_t *c, void *addr, size_t len, hixl_ucx_mem_kind_t kind,
                              unsigned access, hixl_ucx_mem_t **out) {
  if (c == nullptr || addr == nullptr || len == 0 || out == nullptr || (access & HIXL_UCX_REMOTE_READ) == 0 ||
      (access & ~(HIXL_UCX_REMOTE_READ | HIXL_UCX_REMOTE_WRITE)) != 0) {
    return Invalid("mem_register");
  }
  Context *ctx = Ctx(c);
  Memory *raw = nullptr;
  hixl_ucx_status_t st = ctx->Call("mem_register", [&] {
    std::unique_ptr<Memory> mem;
    hixl_ucx_status_t s = Memory::Map(ctx, addr, len, kind, access, &mem);
    if (s != HIXL_UCX_OK) return s;
    raw = mem.get();
    ctx->memories.emplace(raw, std::move(mem));
    return HIXL_UCX_OK;
  });
  if (st == HIXL_UCX_OK) *out = reinterpret_cast<hixl_ucx_mem_t *>(raw);
  return st;
}

hixl_ucx_status_t MemRkey(hixl_ucx_mem_t *m, const void **rkey, size_t *len) {
  if (m == nullptr || rkey == nullptr || len == nullptr) return Invalid("mem_rkey");
  *rkey = Mem(m)->rkey().data();
  *len = Mem(m)->rkey().size();
  return HIXL_UCX_OK;
}

hixl_ucx_status_t MemDeregister(hixl_ucx_mem_t *m) {
  if (m == nullptr) return Invalid("mem_deregister");
  Memory *mem = Mem(m);
  Context *ctx = mem->context();
  return ctx->Call("mem_deregister", [&] {
    mem->Unmap();
    ctx->memories.erase(mem);
    return HIXL_UCX_OK;
  });
}

hixl_ucx_status_t RkeyUnpack(hixl_ucx_ep_t *e, const void *packed, size_t len, hixl_ucx_rkey_t **out) {
  if (e == nullptr || packed == nullptr || len == 0 || out == nullptr) return Invalid("rkey_unpack");
  Endpoint *ep = Ep(e);
  Rkey *raw = nullptr;
  hixl_ucx_status_t st = ep->context()->Call("rkey_unpack", [&] { return ep->Unpack(packed, len, &raw); }, ep);
  if (st == HIXL_UCX_OK) *out = reinterpret_cast<hixl_ucx_rkey_t *>(raw);
  return st;
}

hixl_ucx_status_t RkeyDestroy(hixl_ucx_rkey_t *r) {
  if (r == nullptr) return Invalid("rkey_destroy");
  Rkey *rkey = Key(r);
  Endpoint *ep = rkey->ep;
  return ep->context()->Call(
      "rkey_destroy",
      [&] {
        ep->Drop(rkey);
        return HIXL_UCX_OK;
      },
      ep);
}

hixl_ucx_status_t BatchPost(hixl_ucx_ep_t *e, hixl_ucx_op_t op, const hixl_ucx_piece_t *pieces, size_t count,
                            hixl_ucx_batch_cb on_done, void *user) {
  if (e == nullptr || on_done == nullptr || (op != HIXL_UCX_OP_PUT && op != HIXL_UCX_OP_GET)) {
    return Invalid("batch_post");
  }
  Endpoint *ep = Ep(e);
  if (ep->failed()) {
    UCXP_LOGD("batch refused: the endpoint's peer failed");
    return HIXL_UCX_ERR_PEER_FAILED;
  }
  auto batch = std::make_unique<Batch>();
  hixl_ucx_status_t st = MergePieces(ep, pieces, count, &batch->ops, &batch->bytes);
  if (st != HIXL_UCX_OK) return st;
  batch->ep = ep;
  batch->op = op;
  batch->pieces = count;
  batch->on_done = on_done;
  batch->user = user;
  Batch *raw = batch.release();
  if (!ep->context()->Post([ep, raw] { ep->Start(std::unique_ptr<Batch>(raw)); }, ep)) {
    delete raw;
    UCXP_LOGE("batch refused: the endpoint is being destroyed");
    return HIXL_UCX_ERR_CANCELED;
  }
  return HIXL_UCX_OK;
}

const char *StatusNameC(hixl_ucx_status_t status) { return StatusName(status); }

const hixl_ucx_api_t kApi = {
    HIXL_UCX_ABI_VERSION, sizeof(hixl_ucx_api_t),
    Version,              ListRdmaDevices,
    ContextCreate,        ContextDestroy,
    WorkerAddress,        EpCreate,
    EpDestroy,            EpDescribe,
    EpStats,              MemRegister,
    MemRkey,              MemDeregister,
    RkeyUnpack,           RkeyDestroy,
    BatchPost,            StatusNameC,
};

}  // namespace
}  // namespace hixl::ucx_plugin

extern "C" __attribute__((visibility("default"))) const hixl_ucx_api_t *hixl_ucx_plugin_entry(
    uint32_t host_abi_version, const hixl_ucx_host_t *host) {
  hixl::ucx_plugin::SetLogHost(host);
  if (host_abi_version != HIXL_UCX_ABI_VERSION) {
    UCXP_LOGE("libhixl speaks UCX plug-in ABI %u, this plug-in %u", host_abi_version, HIXL_UCX_ABI_VERSION);
    return nullptr;
  }
  return &hixl::ucx_plugin::kApi;
}
