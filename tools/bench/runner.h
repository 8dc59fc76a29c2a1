// runner.h: hixl_bench's roles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hixl_bench {

struct BenchConfig {
  std::string local;
  std::string remote;
  std::string remote_addr_text;
  std::string ops = "both";
  std::vector<uint64_t> block_sizes;
  uint64_t total_size = 128ull << 20;
  uint64_t batch = 0;  // descriptors per call; 0: total_size / block
  int iters = 10;
  int timeout_ms = 30000;
  int streams = 0;
  bool ipv6 = false;
  bool no_baseline = false;
};

// Registers a buffer of total_size at a server engine on cfg.local, prints
// "READY target addr=0x... size=N" and serves until stdin closes or SIGINT.
int RunTarget(const BenchConfig &cfg);
// Measures against a running target (cfg.remote, cfg.remote_addr_text).
int RunInitiatorRole(const BenchConfig &cfg);
// Starts a target and a TCP baseline peer as child processes, measures both
// and prints a table with ratios.
int RunDemo(BenchConfig cfg);

}  // namespace hixl_bench
