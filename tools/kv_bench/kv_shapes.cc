#include "kv_shapes.h"

#include <algorithm>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

namespace kv_bench {

bool LoadModels(const std::string &path, std::vector<ModelShape> *out, std::string *why) {
  std::ifstream in(path);
  if (!in) {
    *why = "cannot open " + path;
    return false;
  }
  try {
    auto j = nlohmann::json::parse(in);
    for (const auto &m : j.at("models")) {
      ModelShape s;
      s.name = m.at("name").get<std::string>();
      s.layers = m.at("layers").get<int>();
      s.tensors_per_layer = m.value("tensors_per_layer", 2);
      s.kv_heads = m.at("kv_heads").get<int>();
      s.head_dim = m.at("head_dim").get<int>();
      s.dtype_bytes = m.value("dtype_bytes", 2);
      if (s.layers < 1 || s.tensors_per_layer < 1 || s.kv_heads < 1 || s.head_dim < 1 || s.dtype_bytes < 1) {
        *why = "model " + s.name + " has a field < 1";
        return false;
      }
      out->push_back(s);
    }
  } catch (const std::exception &e) {
    *why = path + ": " + e.what();
    return false;
  }
  return true;
}

Geometry MakeGeometry(const ModelShape &m, uint32_t block_tokens, uint64_t prompt_tokens, int layers,
                      uint64_t max_request_bytes, uint64_t pool_factor) {
  Geometry g;
  g.model = m;
  g.block_tokens = block_tokens;
  g.prompt_tokens = prompt_tokens;
  g.block_bytes = uint64_t{block_tokens} * m.kv_heads * m.head_dim * m.dtype_bytes;
  g.request_blocks = (prompt_tokens + block_tokens - 1) / block_tokens;
  g.pool_blocks = g.request_blocks * std::max<uint64_t>(pool_factor, 1);
  g.layers = layers > 0 ? layers : m.layers;
  const uint64_t per_layer = g.request_blocks * g.block_bytes * m.tensors_per_layer;
  if (layers <= 0) {
    while (g.layers > 1 && per_layer * g.layers > max_request_bytes) --g.layers;
  }
  g.tensors = static_cast<uint32_t>(g.layers * m.tensors_per_layer);
  return g;
}

bool MakeBlocks(const std::string &pattern, uint64_t count, uint64_t pool, std::mt19937_64 &rng,
                std::vector<uint64_t> *src, std::vector<uint64_t> *dst) {
  if (count > pool) return false;
  auto one = [&](std::vector<uint64_t> *out) {
    out->clear();
    if (pattern == "contiguous") {
      const uint64_t start = rng() % (pool - count + 1);
      for (uint64_t i = 0; i < count; ++i) out->push_back(start + i);
    } else if (pattern == "random") {
      std::vector<uint64_t> all(pool);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      out->assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(count));
    } else {
      // The pool cut into runs of 4-16 blocks, the runs shuffled, taken
      // until the request has its blocks.
      std::vector<std::pair<uint64_t, uint64_t>> runs;
      for (uint64_t at = 0; at < pool;) {
        const uint64_t len = std::min<uint64_t>(4 + rng() % 13, pool - at);
        runs.emplace_back(at, len);
        at += len;
      }
      std::shuffle(runs.begin(), runs.end(), rng);
      for (size_t r = 0; r < runs.size() && out->size() < count; ++r) {
        for (uint64_t i = 0; i < runs[r].second && out->size() < count; ++i) out->push_back(runs[r].first + i);
      }
    }
    return true;
  };
  return (pattern == "contiguous" || pattern == "random" || pattern == "realistic") && one(src) && one(dst);
}

}  // namespace kv_bench
