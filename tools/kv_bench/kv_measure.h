// kv_measure.h: one hixl_kv_bench session (a target process, this side's
// LlmDataDist and cache) and the rows measured in it.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "hixl/hixl.h"
#include "kv_target.h"
#include "llm_datadist/llm_datadist.h"

namespace kv_bench {

struct RowResult {
  std::string model, pattern, mode, transport;
  int layers = 0;
  uint32_t block_tokens = 0;
  uint64_t prompt_tokens = 0;
  uint64_t request_bytes = 0;
  uint64_t blocks = 0;
  uint64_t descriptors = 0;  // after merging (one request; layer-wise: all layers)
  int iters = 0;
  double kv_p50_ms = 0, kv_p99_ms = 0, kv_gbps = 0;
  double base_p50_ms = 0, base_gbps = 0;  // one contiguous hixl transfer of the same bytes
  double ratio = 0;  // median of contiguous / kv time per request: 1 = as fast as one contiguous transfer
  // Layer-wise push: compute per layer, the time from the last layer's end
  // to the notice at the target, and one layer's push alone.
  double compute_us = 0;
  double exposed_p50_ms = 0, exposed_p99_ms = 0, layer_p50_ms = 0, exposed_over_layer = 0;
  bool checked = false;  // a block's bytes were checked after the row
};

class Session {
 public:
  // Starts the target with the geometry and links to it. False (said on stderr) on failure.
  bool Start(const Geometry &g, const std::string &transport, int timeout_ms);
  void Stop();
  ~Session() { Stop(); }

  // pull or push rows; layerwise with compute_us per layer.
  bool Measure(const std::string &mode, const std::string &pattern, int iters, double compute_us, RowResult *row);

 private:
  bool Request(const std::string &mode, const std::vector<uint64_t> &src, const std::vector<uint64_t> &dst,
               double *seconds, uint64_t *descriptors);
  bool Baseline(bool pull, uint64_t bytes, double *seconds);
  bool LayerWise(const std::vector<uint64_t> &src, const std::vector<uint64_t> &dst, double compute_us, int iter,
                 double *exposed, uint64_t *descriptors);
  bool Check(const std::string &mode, const std::vector<uint64_t> &src, const std::vector<uint64_t> &dst);

  Geometry g_;
  std::string transport_;
  int timeout_ms_ = 60000;
  hixl_bench::Child child_;
  std::string remote_;
  int64_t remote_cache_ = -1;
  uint64_t remote_base_ = 0;
  std::unique_ptr<llm_datadist::LlmDataDist> dd_;
  llm_datadist::Cache cache_;
  std::unique_ptr<hixl::Hixl> raw_;  // the contiguous baseline's engine
  std::mt19937_64 rng_{42};
};

}  // namespace kv_bench
