// batch.h: a batch of puts or gets on one endpoint: the pieces, merged
// where contiguous, and what is left of it in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ucs/type/status.h>

#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

class Endpoint;
struct Rkey;

struct Op {
  uint64_t local;
  uint64_t remote;
  uint64_t len;
  Rkey *rkey;
  uint64_t staged_at = 0;  // where a staged get lands in Batch::staging
};

struct Batch;
// What a UCX request of a batch reports to: the batch and which op (or
// kFlush). The user data of every request a batch makes.
struct OpRef {
  static constexpr uint32_t kFlush = UINT32_MAX;
  Batch *batch;
  uint32_t index;
};

// Checks `pieces` for `ep` (each len non-zero, no range wrapping, each key
// unpacked on `ep`) and merges each run of adjacent pieces that are
// contiguous locally and remotely under one key into one op. INVALID
// (logged) for a bad piece.
hixl_ucx_status_t MergePieces(const Endpoint *ep, const hixl_ucx_piece_t *pieces, size_t count,
                              std::vector<Op> *ops, uint64_t *bytes);

// Everything below is touched on the progress thread only.
struct Batch {
  Endpoint *ep = nullptr;
  hixl_ucx_op_t op = HIXL_UCX_OP_PUT;
  std::vector<Op> ops;
  size_t pieces = 0;
  uint64_t bytes = 0;
  hixl_ucx_batch_cb on_done = nullptr;
  void *user = nullptr;

  // Gets land here first, each copied to the caller's buffer as it
  // completes: on transports whose forced close waits for the peer (see
  // Endpoint::stage_gets_), a reply UCX takes after ep_destroy returned
  // then writes only into this.
  bool staged = false;
  std::unique_ptr<uint8_t[]> staging;  // not zeroed: every byte is written first
  std::vector<OpRef> refs;  // one per op, then the flush's

  size_t ops_left = 0;      // op requests UCX has not completed
  bool flush_left = false;  // the flush request has not completed
  bool posted_all = false;  // no more requests will be made for it
  bool keys_held = false;   // its ops count in their keys' in_use
  bool told = false;        // on_done has run
  bool cut = false;         // told CANCELED by a forced close: staged data is dropped
  hixl_ucx_status_t status = HIXL_UCX_OK;
  std::string why;  // UCX's words for the first failure

  // Keeps the first failure.
  void Fail(ucs_status_t st);
  bool Done() const { return posted_all && ops_left == 0 && !flush_left; }
  // True once UCX touches none of the caller's buffers for it any more.
  bool CallerMemoryFree() const { return posted_all && (ops_left == 0 || staged); }
};

}  // namespace hixl::ucx_plugin
