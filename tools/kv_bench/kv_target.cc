// kv_target.cc: hixl_kv_bench's other process: an LlmDataDist server with
// one allocated cache (its tensors back to back, under blocks key model 0),
// filled with a pattern.
//
// Prints "READY <cache_id> <base address>", then obeys lines on stdin:
//   WAIT <tag>     -> "SEEN <CLOCK_MONOTONIC ns> <status>" once a ready notice
//                     with that tag has come (polled every 20 us)
//   CHECK <tensor> <block> <expect byte> -> "CHECK ok|bad"
// and exits when stdin closes.
#include "kv_target.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "llm_datadist/llm_datadist.h"

namespace kv_bench {
namespace {

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

std::map<llm_datadist::AscendString, llm_datadist::AscendString> BenchOptions(const std::string &transport,
                                                                               const std::string &listen) {
  std::map<llm_datadist::AscendString, llm_datadist::AscendString> o{
      {llm_datadist::OPTION_DEVICE_ID, "0"},
      {llm_datadist::OPTION_SYNC_CACHE_WAIT_TIME, "120000"},
      {llm_datadist::OPTION_GLOBAL_RESOURCE_CONFIG,
       ("{\"comm_resource_config.protocol_desc\": [\"" + transport + ":host\"]}").c_str()}};
  if (!listen.empty()) o[llm_datadist::OPTION_LISTEN_IP_INFO] = listen.c_str();
  return o;
}

llm_datadist::CacheDesc CacheDescOf(const Geometry &g) {
  llm_datadist::CacheDesc desc{};
  desc.placement = llm_datadist::CachePlacement::kHost;
  desc.num_tensors = g.tensors;
  desc.data_type = llm_datadist::DT_BF16;
  desc.shape = {static_cast<int64_t>(g.pool_blocks), static_cast<int64_t>(g.block_bytes / 2)};
  return desc;
}

uint8_t PatternOf(uint32_t tensor, uint64_t block) { return static_cast<uint8_t>(tensor * 31 + block * 7 + 1); }

int RunTarget(const TargetArgs &a) {
  llm_datadist::LlmDataDist dd(kTargetCluster, llm_datadist::LlmRole::kPrompt);
  if (dd.Initialize(BenchOptions(a.transport, a.listen)) != llm_datadist::LLM_SUCCESS) {
    std::printf("FAILED initialize\n");
    return 1;
  }
  llm_datadist::Cache cache;
  // Under BlocksCacheKey(1, 0) too, for Python's pull_blocks (tools/py_bench/kv_pull.py).
  llm_datadist::KvCacheKey key;
  key.kind = llm_datadist::KvCacheKeyKind::kBlocksKey;
  if (dd.AllocateCache(CacheDescOf(a.geometry), {key}, cache) != llm_datadist::LLM_SUCCESS) {
    std::printf("FAILED allocate\n");
    return 1;
  }
  for (uint32_t t = 0; t < a.geometry.tensors; ++t) {
    for (uint64_t b = 0; b < a.geometry.pool_blocks; ++b) {
      std::memset(reinterpret_cast<void *>(cache.tensor_addrs[t] + b * a.geometry.block_bytes), PatternOf(t, b),
                  a.geometry.block_bytes);
    }
  }
  std::printf("READY %ld %lu\n", static_cast<long>(cache.cache_id), static_cast<unsigned long>(cache.tensor_addrs[0]));
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("WAIT ", 0) == 0) {
      const std::string tag = line.substr(5);
      bool seen = false;
      llm_datadist::Status status = llm_datadist::LLM_FAILED;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
      while (!seen && std::chrono::steady_clock::now() < give_up) {
        std::vector<llm_datadist::KvReadyInfo> ready;
        dd.GetReadyKv(ready);
        for (const auto &r : ready) {
          if (r.tag == tag) {
            seen = true;
            status = r.status;
          }
        }
        if (!seen) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      std::printf("SEEN %lu %u\n", static_cast<unsigned long>(seen ? MonotonicNs() : 0), status);
    } else if (line.rfind("CHECK ", 0) == 0) {
      unsigned t = 0, expect = 0;
      unsigned long b = 0;
      std::sscanf(line.c_str() + 6, "%u %lu %u", &t, &b, &expect);
      const auto *p = reinterpret_cast<const uint8_t *>(cache.tensor_addrs[t] + b * a.geometry.block_bytes);
      bool ok = true;
      for (uint64_t i = 0; i < a.geometry.block_bytes && ok; ++i) ok = p[i] == expect;
      std::printf("CHECK %s\n", ok ? "ok" : "bad");
    }
    std::fflush(stdout);
  }
  dd.Finalize();
  return 0;
}

}  // namespace kv_bench
