// hixl_bench: throughput of hixl transfers against a plain-TCP baseline
// measured in the same run.
//
//   hixl_bench --demo                          both roles on this host, a table
//   hixl_bench --role target --local IP:PORT   serve a buffer; prints its address
//   hixl_bench --role initiator --remote IP:PORT --remote-addr 0x... [--op ...]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "runner.h"
#include "tcp_baseline.h"

using namespace hixl_bench;

namespace {

bool ParseSizeList(const std::string &text, std::vector<uint64_t> *out) {
  out->clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    uint64_t v = 0;
    if (!ParseSize(item, &v) || v == 0) return false;
    out->push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return !out->empty();
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"hixl_bench: hixl throughput against a plain TCP socket, measured in the same run"};
  BenchConfig cfg;
  std::string role = "demo";
  std::string block_sizes = "1M";
  std::string total_size = "128M";
  bool demo = false;
  app.add_flag("--demo", demo, "Run target and initiator as two local processes and print a table");
  app.add_option("--role", role, "target | initiator | tcp-peer (internal)")
      ->check(CLI::IsMember({"target", "initiator", "tcp-peer", "demo"}));
  app.add_option("--local", cfg.local, "Local engine address (target: ip:port; initiator: ip)");
  app.add_option("--remote", cfg.remote, "Target engine address ip:port (initiator)");
  app.add_option("--remote-addr", cfg.remote_addr_text, "Target buffer address printed by the target (initiator)");
  app.add_option("--op", cfg.ops, "read | write | both")->check(CLI::IsMember({"read", "write", "both"}));
  app.add_option("--block-size", block_sizes, "Block size(s), comma-separated, e.g. 64K,1M");
  app.add_option("--total-size", total_size, "Bytes per batch (TransferSync call)");
  app.add_option("--batch", cfg.batch, "Descriptors per batch (default: total-size / block-size)");
  app.add_option("--iters", cfg.iters, "Timed batches per point (the median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", cfg.timeout_ms, "TransferSync timeout")->check(CLI::PositiveNumber);
  app.add_option("--streams", cfg.streams, "TCP streams per link (0: the engine's default)");
  app.add_option("--ipv6", cfg.ipv6, "Use ::1 in --demo")->default_val(false);
  app.add_flag("--no-baseline", cfg.no_baseline, "Skip the plain TCP baseline");
  int peer_port = 0;
  app.add_option("--peer-port", peer_port, "tcp-peer: port (internal)");
  CLI11_PARSE(app, argc, argv);

  if (demo) role = "demo";
  if (role == "demo" && app.count("--block-size") == 0) block_sizes = "4K,16K,64K,256K,1M,4M";
  if (!ParseSizeList(block_sizes, &cfg.block_sizes)) {
    std::fprintf(stderr, "bad --block-size '%s'\n", block_sizes.c_str());
    return 2;
  }
  if (!ParseSize(total_size, &cfg.total_size) || cfg.total_size == 0) {
    std::fprintf(stderr, "bad --total-size '%s'\n", total_size.c_str());
    return 2;
  }
  if (role == "tcp-peer") return RunTcpPeer(cfg.local, peer_port, cfg.total_size);
  if (role == "target") return RunTarget(cfg);
  if (role == "initiator") return RunInitiatorRole(cfg);
  return RunDemo(cfg);
}
