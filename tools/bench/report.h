// report.h: what a run measured, and how it is written out: tables on
// stdout, JSON (schema in docs/performance.md) and CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"

namespace hixl_bench {

struct ThroughputResult {
  Point point;
  uint64_t bytes = 0;  // per iteration
  int iters = 0;
  double gbps = 0;     // median over the iterations, 1e9 bytes/s
  std::string baseline;  // "tcp", "memcpy" or "none"
  double baseline_gbps = 0;
  double ratio = 0;    // gbps / baseline_gbps; 0 without a baseline
  double post_max_us = 0;  // async: the longest TransferAsync call, median over the iterations
};

struct LatencyResult {
  std::string transport;
  hixl::TransferOp op = hixl::WRITE;
  uint64_t size = 0;
  int samples = 0;
  double p50_us = 0, p99_us = 0;
  std::string baseline;  // "tcp-pingpong" or "none"
  double baseline_p50_us = 0, baseline_p99_us = 0;
  double ratio_p50 = 0;  // p50_us / baseline_p50_us: lower is better
};

struct ConnectResult {
  std::string transport;
  int samples = 0;
  double p50_ms = 0, p99_ms = 0;
  // A plain TCP connect plus one ping-pong of the same size, for scale.
  std::string baseline;
  double baseline_p50_ms = 0, baseline_p99_ms = 0;
};

struct TransportStatus {
  std::string name;
  bool available = false;
  std::string reason;  // why not, when not
};

// A goal from the issues, checked against this run's figures.
struct Goal {
  std::string name;
  std::string target;    // e.g. "ratio >= 0.9"
  std::string measured;  // e.g. "0.95 (write 1M)"
  bool met = false;
};

// The machine, read when the run starts (load and date) so that the report
// says what the measurements ran next to.
struct HostInfo {
  std::string os, kernel, machine, cpu_model, mem_total;
  long cpus = 0;
  std::string loadavg_start;  // 1-minute load average
  std::string date_start;     // UTC, ISO 8601
};
HostInfo ReadHostInfo();

struct Report {
  HostInfo host;
  std::vector<TransportStatus> transports;
  std::vector<ThroughputResult> results;
  std::vector<LatencyResult> latency;
  std::vector<ConnectResult> connect;
  std::vector<std::string> notes;  // skipped points and other remarks
  std::vector<Goal> goals;
};

void PrintThroughputTable(const std::vector<ThroughputResult> &rows);
void PrintReport(const Report &r);
bool WriteJson(const Report &r, const BenchConfig &cfg, const std::string &path);
bool WriteCsv(const Report &r, const std::string &path);

}  // namespace hixl_bench
