// hixl_kv_bench: the KV-cache layer on real model shapes. For each model,
// block size, prompt and transport it starts a target process (an
// LlmDataDist with one cache), links to it, and measures requests (pull,
// push, or a layer-wise push with a synthetic compute time per layer) for
// each block pattern, beside the same bytes moved as one contiguous hixl
// transfer in the same run. See docs/kv.md.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kv_measure.h"
#include "kv_report.h"
#include "kv_target.h"

namespace {

std::vector<std::string> Split(const std::string &s) { return hixl_bench::SplitList(s); }

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"hixl_kv_bench: LLM-DataDist's pull_blocks, push_blocks and layer-wise push on model shapes"};
  std::string models_path = HIXL_KV_BENCH_MODELS;
  std::string models = "Llama-3.1-8B", blocks = "16", prompts = "4K", patterns = "contiguous,random,realistic";
  std::string modes = "pull,push,layerwise", transports = "tcp,shm", json, role, listen, transport, target_geometry;
  std::string max_request = "1G";
  int layers = 0, iters = 5, timeout_ms = 120000, pool_factor = 2;
  double compute_us = 1000;
  app.add_option("--models-file", models_path, "models JSON (tools/kv_bench/models.json)");
  app.add_option("--model", models, "model names, comma-separated, or \"all\"");
  app.add_option("--block-tokens", blocks, "tokens per block, comma-separated (16,128)");
  app.add_option("--prompt", prompts, "prompt lengths in tokens, comma-separated (1K,4K,32K)");
  app.add_option("--pattern", patterns, "block patterns: contiguous,random,realistic");
  app.add_option("--mode", modes, "pull,push,layerwise");
  app.add_option("--transport", transports, "tcp,shm");
  app.add_option("--layers", layers, "layers to measure (0: the model's, scaled down to --max-request)");
  app.add_option("--max-request", max_request, "largest request when layers are scaled (default 1G)");
  app.add_option("--pool-factor", pool_factor, "blocks of each side's cache per block of a request (default 2)");
  app.add_option("--iters", iters, "requests per row (after one warm-up)");
  app.add_option("--compute-us", compute_us, "layer-wise push: compute time per layer, microseconds (default 1000)");
  app.add_option("--timeout-ms", timeout_ms, "transfer timeout");
  app.add_option("--json", json, "write the rows as JSON here");
  app.add_option("--role", role, "internal: \"target\" runs the other process")->group("");
  app.add_option("--listen", listen, "internal")->group("");
  app.add_option("--target-geometry", target_geometry, "internal")->group("");
  CLI11_PARSE(app, argc, argv);

  if (role == "target") {
    kv_bench::TargetArgs t;
    t.listen = listen;
    t.transport = transports;
    unsigned long tensors = 0, pool = 0, bytes = 0;
    if (std::sscanf(target_geometry.c_str(), "%lu,%lu,%lu", &tensors, &pool, &bytes) != 3) return 2;
    t.geometry.tensors = static_cast<uint32_t>(tensors);
    t.geometry.pool_blocks = pool;
    t.geometry.block_bytes = bytes;
    return kv_bench::RunTarget(t);
  }

  std::vector<kv_bench::ModelShape> all;
  std::string why;
  uint64_t max_bytes = 0;
  if (!kv_bench::LoadModels(models_path, &all, &why) || !hixl_bench::ParseSize(max_request, &max_bytes)) {
    std::fprintf(stderr, "hixl_kv_bench: %s\n", why.empty() ? "bad --max-request" : why.c_str());
    return 2;
  }
  std::vector<kv_bench::ModelShape> chosen;
  for (const auto &m : all) {
    for (const auto &name : Split(models)) {
      if (name == "all" || name == m.name) chosen.push_back(m);
    }
  }
  if (chosen.empty()) {
    std::fprintf(stderr, "hixl_kv_bench: no model named %s in %s\n", models.c_str(), models_path.c_str());
    return 2;
  }
  std::ostringstream cmd;
  for (int i = 0; i < argc; ++i) cmd << (i ? " " : "") << argv[i];
  std::vector<kv_bench::RowResult> rows;
  kv_bench::PrintHeader();
  int failures = 0;
  for (const auto &m : chosen) {
    for (const auto &bt : Split(blocks)) {
      for (const auto &p : Split(prompts)) {
        uint64_t prompt = 0;
        if (!hixl_bench::ParseSize(p, &prompt)) return 2;
        const auto g = kv_bench::MakeGeometry(m, static_cast<uint32_t>(std::stoul(bt)), prompt, layers, max_bytes,
                                              static_cast<uint64_t>(pool_factor));
        for (const auto &t : Split(transports)) {
          kv_bench::Session session;
          if (!session.Start(g, t, timeout_ms)) return 1;
          for (const auto &mode : Split(modes)) {
            for (const auto &pattern : Split(patterns)) {
              kv_bench::RowResult r;
              if (!session.Measure(mode, pattern, iters, compute_us, &r)) {
                std::fprintf(stderr, "hixl_kv_bench: %s %s %s over %s failed\n", m.name.c_str(), mode.c_str(),
                             pattern.c_str(), t.c_str());
                ++failures;
                continue;
              }
              kv_bench::PrintRow(r);
              rows.push_back(r);
            }
          }
        }
      }
    }
  }
  if (!json.empty() && !kv_bench::WriteJson(json, rows, cmd.str())) {
    std::fprintf(stderr, "hixl_kv_bench: cannot write %s\n", json.c_str());
    return 1;
  }
  for (const auto &r : rows) failures += r.checked ? 0 : 1;
  return failures == 0 ? 0 : 1;
}
