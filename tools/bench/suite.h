// suite.h: which points a run measures (a plan: from the flags, or the
// --suite preset) and the loop that measures them, hixl and baseline
// interleaved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"
#include "latency.h"
#include "report.h"

namespace hixl_bench {

struct Plan {
  std::vector<Point> points;
  std::vector<LatencyPoint> latency;
  bool connect = false;
  std::vector<std::string> notes;  // points left out, and why
};

Plan BuildPlan(const BenchConfig &cfg);

// A running target (and, for baselines, a tcp-peer; port 0: none).
struct TargetInfo {
  std::string engine;      // ip:port
  uintptr_t addr = 0;      // its registered buffer, cfg.total_size bytes
  std::string local_host;  // our engine's address (no port)
  TcpPeerAddress peer;
};

// Measures `plan` transport by transport. A transport whose engine cannot
// connect is reported unavailable and skipped. Returns 0, or 1 when a
// measurement failed or no transport was available.
int RunPlan(const BenchConfig &cfg, const Plan &plan, const TargetInfo &target, Report *report);

}  // namespace hixl_bench
