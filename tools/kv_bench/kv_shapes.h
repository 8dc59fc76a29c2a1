// kv_shapes.h: the model shapes hixl_kv_bench measures with (models.json),
// the geometry of one benchmark row, and the block lists of a request.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kv_bench {

struct ModelShape {
  std::string name;
  int layers = 0;
  int tensors_per_layer = 2;
  int kv_heads = 0;
  int head_dim = 0;
  int dtype_bytes = 2;
};

// False (with the reason) for a file that is not a models list.
bool LoadModels(const std::string &path, std::vector<ModelShape> *out, std::string *why);

struct Geometry {
  ModelShape model;
  int layers = 0;  // measured (may be fewer than the model's)
  uint32_t block_tokens = 16;
  uint64_t prompt_tokens = 4096;
  uint64_t request_blocks = 0;
  uint64_t pool_blocks = 0;  // blocks of each side's cache
  uint64_t block_bytes = 0;  // of one tensor
  uint32_t tensors = 0;
  uint64_t request_bytes() const { return request_blocks * block_bytes * tensors; }
};

// The row's geometry; layers scaled down (never below 1) so that a request
// takes at most max_request_bytes, unless `layers` > 0 names them.
Geometry MakeGeometry(const ModelShape &m, uint32_t block_tokens, uint64_t prompt_tokens, int layers,
                      uint64_t max_request_bytes, uint64_t pool_factor);

// Source and destination block ids of one request, from pools of
// `pool` blocks: "contiguous" (one run each), "random" (random picks from a
// permutation of each pool) or "realistic" (runs of 4-16 blocks at random
// places, as an allocator that has been running a while hands out).
bool MakeBlocks(const std::string &pattern, uint64_t count, uint64_t pool, std::mt19937_64 &rng,
                std::vector<uint64_t> *src, std::vector<uint64_t> *dst);

}  // namespace kv_bench
