#include "kv_report.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace kv_bench {

void PrintHeader() {
  std::printf("%-18s %6s %5s %6s %-10s %-9s %-4s %9s %7s %9s %9s %7s %9s %6s %10s %9s %6s\n", "model", "layers",
              "block", "prompt", "pattern", "mode", "net", "bytes", "descs", "p50 ms", "p99 ms", "GB/s", "1x ms",
              "ratio", "exposed ms", "layer ms", "e/l");
}

void PrintRow(const RowResult &r) {
  char exposed[64] = "-", layer[64] = "-", over[64] = "-";
  if (r.mode == "layerwise") {
    std::snprintf(exposed, sizeof(exposed), "%.2f", r.exposed_p50_ms);
    std::snprintf(layer, sizeof(layer), "%.2f", r.layer_p50_ms);
    std::snprintf(over, sizeof(over), "%.2f", r.exposed_over_layer);
  }
  std::printf("%-18s %6d %5u %5luK %-10s %-9s %-4s %8.1fM %7lu %9.2f %9.2f %7.2f %9.2f %6.2f %10s %9s %6s%s\n",
              r.model.c_str(), r.layers, r.block_tokens, static_cast<unsigned long>(r.prompt_tokens / 1024),
              r.pattern.c_str(), r.mode.c_str(), r.transport.c_str(), r.request_bytes / 1048576.0,
              static_cast<unsigned long>(r.descriptors), r.kv_p50_ms, r.kv_p99_ms, r.kv_gbps, r.base_p50_ms, r.ratio,
              exposed, layer, over, r.checked ? "" : "  (bytes NOT checked)");
  std::fflush(stdout);
}

bool WriteJson(const std::string &path, const std::vector<RowResult> &rows, const std::string &command) {
  nlohmann::json out;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  out["tool"] = "hixl_kv_bench";
  out["command"] = command;
  out["host"] = host;
  out["cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  out["rows"] = nlohmann::json::array();
  for (const RowResult &r : rows) {
    nlohmann::json j{{"model", r.model},
                     {"layers", r.layers},
                     {"block_tokens", r.block_tokens},
                     {"prompt_tokens", r.prompt_tokens},
                     {"pattern", r.pattern},
                     {"mode", r.mode},
                     {"transport", r.transport},
                     {"request_bytes", r.request_bytes},
                     {"blocks", r.blocks},
                     {"descriptors", r.descriptors},
                     {"iters", r.iters},
                     {"p50_ms", r.kv_p50_ms},
                     {"p99_ms", r.kv_p99_ms},
                     {"gbps", r.kv_gbps},
                     {"contiguous_p50_ms", r.base_p50_ms},
                     {"contiguous_gbps", r.base_gbps},
                     {"ratio", r.ratio},
                     {"bytes_checked", r.checked}};
    if (r.mode == "layerwise") {
      j["compute_us_per_layer"] = r.compute_us;
      j["exposed_p50_ms"] = r.exposed_p50_ms;
      j["exposed_p99_ms"] = r.exposed_p99_ms;
      j["one_layer_p50_ms"] = r.layer_p50_ms;
      j["exposed_over_layer"] = r.exposed_over_layer;
    }
    out["rows"].push_back(j);
  }
  std::ofstream f(path);
  f << out.dump(2) << "\n";
  return static_cast<bool>(f);
}

}  // namespace kv_bench
