// kv_target.h: hixl_kv_bench's target process (the side it pulls from and
// pushes to), and what both processes agree on.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kv_shapes.h"
#include "llm_datadist/llm_datadist.h"

namespace kv_bench {

constexpr uint64_t kTargetCluster = 1;
constexpr uint64_t kBenchCluster = 2;

struct TargetArgs {
  std::string listen;     // "127.0.0.1:port"
  std::string transport;  // "tcp" or "shm"
  Geometry geometry;
};

// LlmDataDist options: device 0, a 2-minute transfer timeout, data on `transport`.
std::map<llm_datadist::AscendString, llm_datadist::AscendString> BenchOptions(const std::string &transport,
                                                                               const std::string &listen);
// A cache of the geometry's tensors: pool_blocks blocks of bf16.
llm_datadist::CacheDesc CacheDescOf(const Geometry &g);
// The byte every byte of a block of the target's cache holds.
uint8_t PatternOf(uint32_t tensor, uint64_t block);

int RunTarget(const TargetArgs &args);

}  // namespace kv_bench
