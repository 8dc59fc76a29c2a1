#include "runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "bench_util.h"
#include "hixl/hixl.h"
#include "tcp_baseline.h"

namespace hixl_bench {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

std::map<hixl::AscendString, hixl::AscendString> EngineOptions(const BenchConfig &cfg) {
  std::map<hixl::AscendString, hixl::AscendString> opts;
  if (cfg.streams > 0) {
    std::string json = "{\"tcp.streams_per_link\": " + std::to_string(cfg.streams) + "}";
    opts[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = json.c_str();
  }
  return opts;
}

std::vector<hixl::TransferOp> Ops(const std::string &ops) {
  if (ops == "read") return {hixl::READ};
  if (ops == "write") return {hixl::WRITE};
  return {hixl::WRITE, hixl::READ};
}

struct Initiator {
  hixl::Hixl engine;
  void *buf = nullptr;
  uint64_t size = 0;
  std::string remote;
  uintptr_t remote_addr = 0;

  ~Initiator() {
    engine.Finalize();
    FreeBuffer(buf, size);
  }

  bool Setup(const BenchConfig &cfg, const std::string &local) {
    if (engine.Initialize(local.c_str(), EngineOptions(cfg)) != hixl::SUCCESS) return false;
    size = cfg.total_size;
    buf = AllocBuffer(size);
    hixl::MemDesc d{};
    d.addr = reinterpret_cast<uintptr_t>(buf);
    d.len = size;
    hixl::MemHandle h;
    if (buf == nullptr || engine.RegisterMem(d, hixl::MEM_HOST, h) != hixl::SUCCESS) return false;
    return engine.Connect(remote.c_str(), 5000) == hixl::SUCCESS;
  }

  // Seconds for one batch, or negative on error.
  double Once(hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &descs, int timeout_ms) {
    double t0 = NowSeconds();
    hixl::Status s = engine.TransferSync(remote.c_str(), op, descs, timeout_ms);
    if (s != hixl::SUCCESS) {
      std::fprintf(stderr, "TransferSync failed: %u\n", s);
      return -1;
    }
    return NowSeconds() - t0;
  }
};

std::vector<hixl::TransferOpDesc> MakeDescs(uintptr_t local, uintptr_t remote, uint64_t block, uint64_t count) {
  std::vector<hixl::TransferOpDesc> descs(count);
  for (uint64_t i = 0; i < count; ++i) descs[i] = {local + i * block, remote + i * block, block};
  return descs;
}

struct Row {
  const char *op;
  uint64_t block;
  uint64_t count;
  double hixl_gbps;
  double tcp_gbps;
};

void PrintTable(const std::vector<Row> &rows, bool baseline) {
  std::printf("\n%-6s %8s %8s %12s", "op", "block", "batch", "hixl GB/s");
  if (baseline) std::printf(" %12s %8s", "tcp GB/s", "ratio");
  std::printf("\n");
  for (const auto &r : rows) {
    std::printf("%-6s %8s %8" PRIu64 " %12.2f", r.op, FormatSize(r.block).c_str(), r.count, r.hixl_gbps);
    if (baseline) std::printf(" %12.2f %8.2f", r.tcp_gbps, r.hixl_gbps / r.tcp_gbps);
    std::printf("\n");
  }
  std::fflush(stdout);
}

// Runs every (op, block) point; alternates hixl and baseline iterations so
// that both see the same machine noise.
int Measure(const BenchConfig &cfg, Initiator &ini, TcpBaselineClient *tcp) {
  std::vector<Row> rows;
  for (hixl::TransferOp op : Ops(cfg.ops)) {
    for (uint64_t block : cfg.block_sizes) {
      uint64_t count = cfg.batch > 0 ? cfg.batch : cfg.total_size / block;
      if (count == 0 || count * block > cfg.total_size) {
        std::fprintf(stderr, "block %s x batch %" PRIu64 " does not fit in total-size %s\n",
                     FormatSize(block).c_str(), count, FormatSize(cfg.total_size).c_str());
        return 2;
      }
      auto descs = MakeDescs(reinterpret_cast<uintptr_t>(ini.buf), ini.remote_addr, block, count);
      uint64_t bytes = block * count;
      if (ini.Once(op, descs, cfg.timeout_ms) < 0) return 1;  // warm-up
      if (tcp != nullptr && tcp->Move(op == hixl::WRITE, bytes) < 0) return 1;
      std::vector<double> th, tt;
      for (int i = 0; i < cfg.iters; ++i) {
        double a = ini.Once(op, descs, cfg.timeout_ms);
        if (a < 0) return 1;
        th.push_back(a);
        if (tcp != nullptr) {
          double b = tcp->Move(op == hixl::WRITE, bytes);
          if (b < 0) return 1;
          tt.push_back(b);
        }
      }
      double hg = static_cast<double>(bytes) / Median(th) / 1e9;
      double tg = tcp != nullptr ? static_cast<double>(bytes) / Median(tt) / 1e9 : 0;
      rows.push_back({op == hixl::READ ? "read" : "write", block, count, hg, tg});
      std::fprintf(stderr, "  %s %s: hixl %.2f GB/s%s\n", rows.back().op, FormatSize(block).c_str(), hg,
                   tcp != nullptr ? (", tcp " + std::to_string(tg) + " GB/s").c_str() : "");
    }
  }
  PrintTable(rows, tcp != nullptr);
  return 0;
}

}  // namespace

int RunTarget(const BenchConfig &cfg) {
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  hixl::Hixl engine;
  if (engine.Initialize(cfg.local.c_str(), {}) != hixl::SUCCESS) {
    std::fprintf(stderr, "target: Initialize %s failed\n", cfg.local.c_str());
    return 1;
  }
  void *buf = AllocBuffer(cfg.total_size);
  hixl::MemDesc d{};
  d.addr = reinterpret_cast<uintptr_t>(buf);
  d.len = cfg.total_size;
  hixl::MemHandle h;
  if (buf == nullptr || engine.RegisterMem(d, hixl::MEM_HOST, h) != hixl::SUCCESS) {
    std::fprintf(stderr, "target: RegisterMem failed\n");
    return 1;
  }
  std::printf("READY target engine=%s addr=0x%" PRIxPTR " size=%" PRIu64 "\n", cfg.local.c_str(), d.addr,
              cfg.total_size);
  std::fflush(stdout);
  bool interactive = isatty(STDIN_FILENO);
  while (!g_stop) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, 200) > 0 && !interactive) {
      char c;
      if (read(STDIN_FILENO, &c, 1) <= 0) break;  // stdin closed: our parent is done
    }
  }
  engine.Finalize();
  FreeBuffer(buf, cfg.total_size);
  return 0;
}

int RunInitiatorRole(const BenchConfig &cfg) {
  if (cfg.remote.empty() || cfg.remote_addr_text.empty()) {
    std::fprintf(stderr, "initiator: --remote and --remote-addr are required\n");
    return 2;
  }
  Initiator ini;
  ini.remote = cfg.remote;
  ini.remote_addr = static_cast<uintptr_t>(std::strtoull(cfg.remote_addr_text.c_str(), nullptr, 0));
  if (!ini.Setup(cfg, cfg.local.empty() ? std::string("127.0.0.1") : cfg.local)) {
    std::fprintf(stderr, "initiator: set-up failed (see the log above)\n");
    return 1;
  }
  return Measure(cfg, ini, nullptr);
}

int RunDemo(BenchConfig cfg) {
  const std::string ip = cfg.ipv6 ? "::1" : "127.0.0.1";
  const std::string host = cfg.ipv6 ? "[::1]" : "127.0.0.1";
  int family = cfg.ipv6 ? AF_INET6 : AF_INET;
  int port = FreePort(family);
  Child target;
  std::string line;
  std::string target_name = host + ":" + std::to_string(port);
  if (!SpawnSelf({"--role", "target", "--local", target_name, "--total-size", std::to_string(cfg.total_size)},
                 &target) ||
      !ReadLineWithPrefix(target, "READY target ", 10000, &line)) {
    std::fprintf(stderr, "demo: the target process did not start\n");
    StopChild(target);
    return 1;
  }
  size_t at = line.find("addr=");
  uintptr_t remote_addr =
      at == std::string::npos ? 0 : static_cast<uintptr_t>(std::strtoull(line.c_str() + at + 5, nullptr, 0));
  std::printf("hixl_bench demo: target %s (pid %d), initiator in this process (pid %d), %s per batch\n",
              target_name.c_str(), target.pid, getpid(), FormatSize(cfg.total_size).c_str());

  Child peer;
  TcpBaselineClient tcp;
  bool baseline = !cfg.no_baseline;
  if (baseline) {
    int peer_port = FreePort(family);
    // Buffers as large as hixl's, so that both touch the same amount of memory.
    if (!SpawnSelf({"--role", "tcp-peer", "--local", ip, "--peer-port", std::to_string(peer_port), "--total-size",
                    std::to_string(cfg.total_size)},
                   &peer) ||
        !ReadLineWithPrefix(peer, "READY tcp-peer", 10000, &line) || !tcp.Connect(ip, peer_port, cfg.total_size)) {
      std::fprintf(stderr, "demo: the TCP baseline peer did not start\n");
      StopChild(target);
      StopChild(peer);
      return 1;
    }
  }
  int rc = 1;
  {
    Initiator ini;
    ini.remote = target_name;
    ini.remote_addr = remote_addr;
    if (remote_addr != 0 && ini.Setup(cfg, host)) {
      rc = Measure(cfg, ini, baseline ? &tcp : nullptr);
    } else {
      std::fprintf(stderr, "demo: initiator set-up failed (see the log above)\n");
    }
  }
  StopChild(target);
  if (baseline) StopChild(peer);
  return rc;
}

}  // namespace hixl_bench
