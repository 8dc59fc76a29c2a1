/* ucx_plugin_api.h: the C ABI between libhixl and its UCX plug-in
 * (libhixl_ucx.so). libhixl never links UCX: it dlopens the plug-in, calls
 * its one exported entry point and uses the table of functions it returns.
 * docs/ucx.md has the same table with the rules; change both together and
 * bump HIXL_UCX_ABI_VERSION on any change to a type or a call below.
 *
 * Objects and threads. A context is one ucp_context (RMA, WAKEUP) with ONE
 * worker, driven by one progress thread that the plug-in starts with the
 * context and stops with it. Every UCX call runs on that thread: the other
 * calls hand their work to it and wait, so every call is safe from any
 * thread, except from a callback: there only batch_post and the calls
 * that just read (version, status_name, worker_address, mem_rkey, ep_stats)
 * may be made; the others return HIXL_UCX_ERR_INVALID.
 * Callbacks (batch done, endpoint failed) run on the progress thread and
 * must not block.
 *
 * Ownership. Handles (context, ep, mem, rkey) are the plug-in's; each is
 * valid from the call that returns it until the call that destroys it, and
 * context_destroy destroys whatever of its own is left. Bytes the plug-in
 * returns (worker address, packed rkey) stay valid while their object
 * lives. Buffers named in a batch belong to the caller, who keeps them valid
 * until the batch's callback has run, or until ep_destroy has returned. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The loader and the plug-in must agree exactly. */
#define HIXL_UCX_ABI_VERSION 2u
/* The one symbol the plug-in exports, of type hixl_ucx_entry_fn. */
#define HIXL_UCX_ENTRY_SYMBOL "hixl_ucx_plugin_entry"

typedef enum hixl_ucx_status {
  HIXL_UCX_OK = 0,
  HIXL_UCX_ERR_INVALID = 1,      /* a bad argument, or a call not allowed where it was made */
  HIXL_UCX_ERR_NO_MEMORY = 2,
  HIXL_UCX_ERR_UNSUPPORTED = 3,  /* e.g. a memory kind this UCX cannot map */
  HIXL_UCX_ERR_NO_DEVICE = 4,    /* UCX found no transport it may use */
  HIXL_UCX_ERR_UNREACHABLE = 5,  /* no transport of ours reaches the peer's */
  HIXL_UCX_ERR_PEER_FAILED = 6,  /* the peer's process or the link to it failed */
  HIXL_UCX_ERR_CANCELED = 7,     /* the endpoint was closed (or closing) under it */
  HIXL_UCX_ERR_TIMED_OUT = 8,    /* a bounded wait inside the plug-in ran out */
  HIXL_UCX_ERR_INTERNAL = 9      /* any other UCX error (logged in UCX's words) */
} hixl_ucx_status_t;

typedef enum hixl_ucx_op { HIXL_UCX_OP_PUT = 0, HIXL_UCX_OP_GET = 1 } hixl_ucx_op_t;

typedef enum hixl_ucx_mem_kind { HIXL_UCX_MEM_HOST = 0, HIXL_UCX_MEM_CUDA = 1 } hixl_ucx_mem_kind_t;

/* What peers holding a registration's key may do (bits). */
enum { HIXL_UCX_REMOTE_READ = 1u, HIXL_UCX_REMOTE_WRITE = 2u };

/* Log levels, the same numbers as hixl::LogLevel. */
enum { HIXL_UCX_LOG_ERROR = 0, HIXL_UCX_LOG_WARN = 1, HIXL_UCX_LOG_INFO = 2, HIXL_UCX_LOG_DEBUG = 3 };

typedef struct hixl_ucx_context hixl_ucx_context_t;
typedef struct hixl_ucx_ep hixl_ucx_ep_t;
typedef struct hixl_ucx_mem hixl_ucx_mem_t;
typedef struct hixl_ucx_rkey hixl_ucx_rkey_t;

/* What libhixl lends the plug-in: its log. The plug-in logs each failure
 * once, with UCX's reason, through it. */
typedef struct hixl_ucx_host {
  int (*log_enabled)(int level);
  void (*log)(int level, const char *msg);
} hixl_ucx_host_t;

/* One UCX setting: a name without the "UCX_" prefix ("TLS") and its value. */
typedef struct hixl_ucx_setting {
  const char *name;
  const char *value;
} hixl_ucx_setting_t;

/* Context settings. A setting whose UCX_<NAME> is in the environment is not
 * applied: the user's own UCX environment wins. */
typedef struct hixl_ucx_context_params {
  const char *name;         /* shown in UCX's own logs; NULL: UCX's default */
  const char *tls;          /* UCX_TLS; NULL: UCX's default */
  const char *net_devices;  /* UCX_NET_DEVICES; NULL: UCX's default */
  int32_t traffic_class;    /* UCX_IB_TRAFFIC_CLASS (0..255); -1: UCX's default */
  int32_t service_level;    /* UCX_IB_SL (0..15); -1: UCX's default */
  const hixl_ucx_setting_t *settings; /* more settings, applied after the above */
  size_t num_settings;
} hixl_ucx_context_params_t;

/* One piece of a batch: len bytes between local_addr (this process) and
 * remote_addr (the peer's, inside the region rkey was packed for). */
typedef struct hixl_ucx_piece {
  uint64_t local_addr;
  uint64_t remote_addr;
  uint64_t len;
  hixl_ucx_rkey_t *rkey;
} hixl_ucx_piece_t;

typedef struct hixl_ucx_ep_stats {
  uint64_t batches;         /* batches completed, with any status */
  uint64_t failed_batches;  /* of which not HIXL_UCX_OK */
  uint64_t pieces;          /* pieces handed in */
  uint64_t ops;             /* puts and gets posted (pieces after merging) */
  uint64_t bytes;           /* bytes of the batches that completed OK */
  uint64_t last_post_ns;    /* how long the progress thread took to post the last batch */
} hixl_ucx_ep_stats_t;

/* Runs once per accepted batch, on the progress thread. */
typedef void (*hixl_ucx_batch_cb)(void *user, hixl_ucx_status_t status);
/* Runs at most once per endpoint, on the progress thread, when UCX reports
 * the peer failed; `why` is UCX's reason, valid during the call. */
typedef void (*hixl_ucx_ep_error_cb)(void *user, hixl_ucx_status_t status, const char *why);

typedef struct hixl_ucx_api {
  uint32_t abi_version; /* HIXL_UCX_ABI_VERSION the plug-in was built with */
  uint32_t struct_size; /* sizeof(hixl_ucx_api_t) in the plug-in */

  /* "hixl_ucx <abi> (UCX <version of the loaded libucp>)". Static string. */
  const char *(*version)(void);
  /* Which RDMA-capable devices (InfiniBand, RoCE, ...) UCX sees: *count of
   * them, their names comma-separated into names[names_len] (cut to fit,
   * NUL-terminated). OK with *count 0 on a host without one. */
  hixl_ucx_status_t (*rdma_devices)(char *names, size_t names_len, size_t *count);
  /* Creates a context, its worker and its progress thread. */
  hixl_ucx_status_t (*context_create)(const hixl_ucx_context_params_t *params, hixl_ucx_context_t **out);
  /* Force-closes the context's endpoints (their batches complete with
   * CANCELED), unmaps its memory, stops the thread, frees everything. */
  hixl_ucx_status_t (*context_destroy)(hixl_ucx_context_t *ctx);
  /* The worker's address: the bytes a peer's ep_create needs. */
  hixl_ucx_status_t (*worker_address)(hixl_ucx_context_t *ctx, const void **addr, size_t *len);

  /* An endpoint to the worker whose address is given, with UCX's peer error
   * handling: a failed peer is reported through on_error and fails the
   * batches in flight, never hangs them. UNREACHABLE when no transport of
   * ours reaches the peer's. */
  hixl_ucx_status_t (*ep_create)(hixl_ucx_context_t *ctx, const void *peer_addr, size_t len,
                                 hixl_ucx_ep_error_cb on_error, void *user, hixl_ucx_ep_t **out);
  /* Waits up to flush_timeout_ms (0: not at all) for the endpoint's
   * batches to finish, then closes it: gracefully (the peer is told, within
   * what is left of the timeout, at most 1 s) if they did, by force if not.
   * When it returns, every batch of the endpoint has had its callback
   * (CANCELED if cut) and UCX touches none of their buffers any more; the
   * endpoint and its rkeys are gone. OK: flushed (or nothing was in
   * flight). CANCELED: batches were cut. TIMED_OUT: UCX kept a buffer
   * (a UCX defect; logged). */
  hixl_ucx_status_t (*ep_destroy)(hixl_ucx_ep_t *ep, uint32_t flush_timeout_ms);
  /* The transports and devices the endpoint uses, e.g. "tcp/lo", into
   * buf[len] (cut to fit, NUL-terminated). For logs. */
  hixl_ucx_status_t (*ep_describe)(hixl_ucx_ep_t *ep, char *buf, size_t len);
  /* The endpoint's counters (a consistent-enough snapshot, for logs and tests). */
  hixl_ucx_status_t (*ep_stats)(hixl_ucx_ep_t *ep, hixl_ucx_ep_stats_t *out);

  /* Maps [addr, addr+len) of the given kind for remote access (ucp_mem_map
   * of existing memory) and packs its remote key. `access`: HIXL_UCX_REMOTE_*
   * bits, READ at least; without WRITE the memory is mapped and its key
   * packed without remote (or local) write access (UCP_MEM_MAP_PROT_*):
   * memory this process may only read can be mapped so, and an RDMA NIC
   * refuses a peer's put with that key. (UCX's software RMA over tcp and
   * shared memory checks no key: see docs/ucx.md.) */
  hixl_ucx_status_t (*mem_register)(hixl_ucx_context_t *ctx, void *addr, size_t len, hixl_ucx_mem_kind_t kind,
                                    unsigned access, hixl_ucx_mem_t **out);
  /* The packed remote key of a registration: the bytes a peer unpacks. */
  hixl_ucx_status_t (*mem_rkey)(hixl_ucx_mem_t *mem, const void **rkey, size_t *len);
  /* Unmaps. Peers' unpacked keys for it must be gone first (the caller's
   * protocol sees to that; over RDMA a late access fails the peer's link). */
  hixl_ucx_status_t (*mem_deregister)(hixl_ucx_mem_t *mem);

  /* Unpacks a peer's packed key for use on this endpoint (cache it: one per
   * endpoint and peer region). */
  hixl_ucx_status_t (*rkey_unpack)(hixl_ucx_ep_t *ep, const void *packed, size_t len, hixl_ucx_rkey_t **out);
  /* Drops a key. Batches already accepted that use it still complete; none
   * may name it after this returns. */
  hixl_ucx_status_t (*rkey_destroy)(hixl_ucx_rkey_t *rkey);

  /* Starts a batch: one put (or get) per piece, adjacent pieces that are
   * contiguous on both sides and share a key merged first; for puts then
   * one flush. OK: accepted, and on_done runs exactly once, after every
   * request completed (puts: the flush, remote completion; gets: each get,
   * the data in place) or with the first error. Any other status: refused, on_done never runs. The pieces array
   * may be reused as soon as this returns. */
  hixl_ucx_status_t (*batch_post)(hixl_ucx_ep_t *ep, hixl_ucx_op_t op, const hixl_ucx_piece_t *pieces,
                                  size_t count, hixl_ucx_batch_cb on_done, void *user);

  /* "OK", "PEER_FAILED", ...: a static string. */
  const char *(*status_name)(hixl_ucx_status_t status);
} hixl_ucx_api_t;

/* The entry point: returns the table, or NULL (with a line through
 * host->log) when host_abi_version is not the plug-in's. */
typedef const hixl_ucx_api_t *(*hixl_ucx_entry_fn)(uint32_t host_abi_version, const hixl_ucx_host_t *host);
const hixl_ucx_api_t *hixl_ucx_plugin_entry(uint32_t host_abi_version, const hixl_ucx_host_t *host);

#ifdef __cplusplus
}
#endif
