// hixl_bench: hixl throughput and latency against baselines measured in the
// same run (plain TCP sockets, memcpy), as tables, JSON and CSV.
//
//   hixl_bench --demo                          both roles on this host, a table
//   hixl_bench --demo --suite --json r.json    the full sweep (docs/performance.md)
//   hixl_bench --role target --local IP:PORT   serve a buffer; prints its address
//   hixl_bench --role initiator --remote IP:PORT --remote-addr 0x... [--op ...]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "config.h"
#include "roles.h"
#include "tcp_baseline.h"

using namespace hixl_bench;

namespace {

// Flags as text, turned into BenchConfig once CLI11 is done.
struct Flags {
  std::string role = "demo";
  bool demo = false;
  std::string op = "both";
  std::string block_sizes;
  std::string total_size = "128M";
  std::string batch;
  std::string threads;
  std::string depth;
  std::string transport;
  std::string layout = "scattered";
  std::string latency_size = "64";
  bool async = false;
  int peer_port = 0;
};

const char *kDemoBlocks = "4K,16K,64K,256K,1M,4M";
const char *kSuiteBlocks = "4K,16K,64K,256K,1M,4M,16M,64M";

bool Resolve(const CLI::App &app, const Flags &f, BenchConfig *cfg) {
  auto bad = [](const char *flag, const std::string &v) {
    std::fprintf(stderr, "bad %s '%s'\n", flag, v.c_str());
    return false;
  };
  if (f.op == "read") cfg->ops = {hixl::READ};
  if (f.op == "write") cfg->ops = {hixl::WRITE};
  if (f.op == "both") cfg->ops = {hixl::WRITE, hixl::READ};

  // --latency / --connect-latency alone measure only that; with an
  // explicit --block-size (or --suite) the throughput sweep runs too.
  const bool blocks_given = app.count("--block-size") > 0;
  cfg->throughput = cfg->suite || blocks_given || (!cfg->latency && !cfg->connect_latency);
  std::string blocks = blocks_given ? f.block_sizes : (cfg->suite ? kSuiteBlocks : kDemoBlocks);
  if (!ParseSizeList(blocks, &cfg->block_sizes)) return bad("--block-size", blocks);
  if (!ParseSize(f.total_size, &cfg->total_size) || cfg->total_size == 0) return bad("--total-size", f.total_size);
  if (!ParseSize(f.latency_size, &cfg->latency_size) || cfg->latency_size == 0 ||
      cfg->latency_size > cfg->total_size) {
    return bad("--latency-size", f.latency_size);
  }

  std::string transports = !f.transport.empty() ? f.transport : (cfg->suite ? "tcp,shm" : "tcp");
  cfg->transports = SplitList(transports);
  for (const auto &t : cfg->transports) {
    if (t != "tcp" && t != "shm" && t != "ucx") return bad("--transport", transports);
  }
  cfg->layout = f.layout == "contiguous" ? Layout::kContiguous
               : f.layout == "one-block" ? Layout::kOneBlock
                                         : Layout::kScattered;
  if (cfg->repeat > 1 && !cfg->no_baseline) {
    std::fprintf(stderr, "--repeat %d needs --no-baseline: the baselines move each byte once\n", cfg->repeat);
    return false;
  }

  // In the suite, --batch/--threads/--depth replace its extra sweeps; else
  // they are the sweep.
  if (!f.batch.empty()) {
    std::vector<uint64_t> v;
    if (!ParseSizeList(f.batch, &v)) return bad("--batch", f.batch);
    (cfg->suite ? cfg->suite_batches : cfg->batches) = v;
  }
  if (!f.threads.empty()) {
    std::vector<int> v;
    if (!ParseIntList(f.threads, &v)) return bad("--threads", f.threads);
    (cfg->suite ? cfg->suite_threads : cfg->threads) = v;
  }
  if (!f.depth.empty()) {
    std::vector<int> v;
    if (!ParseIntList(f.depth, &v)) return bad("--depth", f.depth);
    (cfg->suite ? cfg->suite_depths : cfg->depths) = v;
  }
  if (f.async || !f.depth.empty()) cfg->mode = Mode::kAsync;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"hixl_bench: hixl throughput and latency against baselines measured in the same run"};
  // A later flag wins, so that a wrapper's defaults (scripts/bench.sh) can
  // be overridden by arguments appended to its command line.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  BenchConfig cfg;
  Flags f;
  app.add_flag("--demo", f.demo, "Run target and initiator as local processes and print tables");
  app.add_option("--role", f.role, "target | initiator | tcp-peer (internal)")
      ->check(CLI::IsMember({"target", "initiator", "tcp-peer", "demo"}));
  app.add_option("--local", cfg.local, "Local engine address (target: ip:port; initiator: ip)");
  app.add_option("--remote", cfg.remote, "Target engine address ip:port (initiator)");
  app.add_option("--remote-addr", cfg.remote_addr_text, "Target buffer address printed by the target (initiator)");
  app.add_option("--op", f.op, "read | write | both")->check(CLI::IsMember({"read", "write", "both"}));
  app.add_option("--block-size", f.block_sizes, "Block size(s), comma-separated, e.g. 64K,1M");
  app.add_option("--total-size", f.total_size, "Bytes per iteration, and the size of both buffers");
  app.add_option("--batch", f.batch,
                 "Descriptors per call or request, comma-separated (default: sync the whole iteration in one call, "
                 "async 1)");
  app.add_option("--iters", cfg.iters, "Timed iterations per point (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--repeat", cfg.repeat,
                 "Run each iteration's calls this many times over the same buffers (a small, cache-resident "
                 "--total-size, like ucx_perftest's; needs --no-baseline)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", cfg.timeout_ms, "Transfer timeout (sync and async)")->check(CLI::PositiveNumber);
  app.add_option("--streams", cfg.streams, "TCP streams per link (0: the engine's default)");
  app.add_option("--auth-key-file", cfg.auth_key_file,
                 "Key file every engine proves it holds (auth.key_file; default: HIXL_AUTH_KEY_FILE, or none)");
  app.add_option("--ipv6", cfg.ipv6, "Use ::1 in --demo")->default_val(false);
  app.add_flag("--no-baseline", cfg.no_baseline, "Skip the baselines");
  app.add_flag("--suite", cfg.suite,
               "The preset sweep: blocks 4K..64M x read/write x sync, batch/thread/async sweeps, 64 B latency, "
               "connect latency, transports tcp,shm");
  app.add_option("--threads", f.threads, "Initiator threads sharing one engine and link, comma-separated");
  app.add_flag("--memfd", cfg.target_memfd,
               "The target's buffer is a sealed memfd (as AllocateCache's): over shm the initiator maps it");
  app.add_flag("--async", f.async, "TransferAsync with --depth requests in flight, polled with GetTransferStatus");
  app.add_option("--depth", f.depth, "Async requests in flight per thread, comma-separated (default 16)");
  app.add_flag("--latency", cfg.latency, "Single small TransferSync calls against a TCP ping-pong: p50/p99");
  app.add_option("--latency-size", f.latency_size, "Bytes per latency sample (default 64)");
  app.add_option("--samples", cfg.latency_samples, "Latency samples per point")->check(CLI::PositiveNumber);
  app.add_flag("--connect-latency", cfg.connect_latency,
               "Connect to the completion of a first --latency-size TransferSync (Disconnect between)");
  app.add_option("--connect-samples", cfg.connect_samples, "Fresh connects measured")->check(CLI::PositiveNumber);
  app.add_option("--transport", f.transport,
                 "tcp | shm | ucx, comma-separated (default tcp; --suite: tcp,shm). ucx: UCX's own environment "
                 "(UCX_TLS, UCX_NET_DEVICES) picks its transports, for both processes");
  app.add_option("--layout", f.layout,
                 "scattered (every block its own segment) | contiguous | one-block (every descriptor the same "
                 "block each side, as ucx_perftest's one buffer)")
      ->check(CLI::IsMember({"scattered", "contiguous", "one-block"}));
  app.add_option("--json", cfg.json_path, "Write the results as JSON to this file");
  app.add_option("--csv", cfg.csv_path, "Write the throughput results as CSV to this file");
  app.add_option("--peer-port", f.peer_port, "tcp-peer: port (internal)");
  CLI11_PARSE(app, argc, argv);

  for (int i = 0; i < argc; ++i) cfg.command_line += (i > 0 ? " " : "") + std::string(i == 0 ? "hixl_bench" : argv[i]);
  if (f.demo) f.role = "demo";
  if (!Resolve(app, f, &cfg)) return 2;
  if (f.role == "tcp-peer") return RunTcpPeer(cfg.local, f.peer_port, cfg.total_size);
  if (f.role == "target") return RunTarget(cfg);
  if (f.role == "initiator") return RunInitiatorRole(cfg);
  return RunDemo(cfg);
}
