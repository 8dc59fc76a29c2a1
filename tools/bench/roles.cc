#include "roles.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "goals.h"
#include "hixl/hixl.h"
#include "report.h"
#include "suite.h"

namespace hixl_bench {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

// Measures, then prints and writes what was measured (also after a failed
// measurement: what was measured until then is worth seeing).
int MeasureAndReport(const BenchConfig &cfg, const TargetInfo &target) {
  Plan plan = BuildPlan(cfg);
  Report report;
  report.host = ReadHostInfo();
  int rc = RunPlan(cfg, plan, target, &report);
  report.goals = EvaluateGoals(report);
  PrintReport(report);
  if (!cfg.json_path.empty() && !WriteJson(report, cfg, cfg.json_path)) rc = rc == 0 ? 1 : rc;
  if (!cfg.csv_path.empty() && !WriteCsv(report, cfg.csv_path)) rc = rc == 0 ? 1 : rc;
  return rc;
}

}  // namespace

int RunTarget(const BenchConfig &cfg) {
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  hixl::Hixl engine;
  // A target runs ucx only when asked to (unless it has an RDMA device).
  nlohmann::json config = nlohmann::json::object();
  if (std::find(cfg.transports.begin(), cfg.transports.end(), "ucx") != cfg.transports.end()) {
    config["comm_resource_config.protocol_desc"] = {"ucx:host", "shm:host", "tcp:host"};
  }
  if (!cfg.auth_key_file.empty()) config["auth.key_file"] = cfg.auth_key_file;
  std::map<hixl::AscendString, hixl::AscendString> opts;
  if (!config.empty()) {
    opts[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = config.dump().c_str();
  }
  if (engine.Initialize(cfg.local.c_str(), opts) != hixl::SUCCESS) {
    std::fprintf(stderr, "target: Initialize %s failed\n", cfg.local.c_str());
    return 1;
  }
  void *buf = cfg.target_memfd ? AllocMemfdBuffer(cfg.total_size) : AllocBuffer(cfg.total_size);
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
  TargetInfo target;
  target.engine = cfg.remote;
  target.addr = static_cast<uintptr_t>(std::strtoull(cfg.remote_addr_text.c_str(), nullptr, 0));
  target.local_host = cfg.local.empty() ? std::string("127.0.0.1") : cfg.local;
  return MeasureAndReport(cfg, target);
}

int RunDemo(const BenchConfig &cfg) {
  const std::string ip = cfg.ipv6 ? "::1" : "127.0.0.1";
  const std::string host = cfg.ipv6 ? "[::1]" : "127.0.0.1";
  const int family = cfg.ipv6 ? AF_INET6 : AF_INET;
  const int port = FreePort(family);
  Child target;
  std::string line;
  const std::string target_name = host + ":" + std::to_string(port);
  std::string transports;
  for (const auto &t : cfg.transports) transports += (transports.empty() ? "" : ",") + t;
  std::vector<std::string> args = {"--role", "target", "--local", target_name, "--total-size",
                                   std::to_string(cfg.total_size), "--transport", transports};
  if (cfg.target_memfd) args.push_back("--memfd");
  if (!cfg.auth_key_file.empty()) args.insert(args.end(), {"--auth-key-file", cfg.auth_key_file});
  if (!SpawnSelf(args, &target) ||
      !ReadLineWithPrefix(target, "READY target ", 10000, &line)) {
    std::fprintf(stderr, "demo: the target process did not start\n");
    StopChild(target);
    return 1;
  }
  const size_t at = line.find("addr=");
  TargetInfo info;
  info.engine = target_name;
  info.addr = at == std::string::npos ? 0 : static_cast<uintptr_t>(std::strtoull(line.c_str() + at + 5, nullptr, 0));
  info.local_host = host;
  std::printf("hixl_bench demo: target %s (pid %d), initiator in this process (pid %d), %s per iteration\n",
              target_name.c_str(), target.pid, getpid(), FormatSize(cfg.total_size).c_str());
  std::fflush(stdout);

  // The baseline peer is a process of its own, as the target is, with a
  // buffer as large as the target's, so that both touch as much memory.
  Child peer;
  if (!cfg.no_baseline) {
    const int peer_port = FreePort(family);
    if (!SpawnSelf({"--role", "tcp-peer", "--local", ip, "--peer-port", std::to_string(peer_port), "--total-size",
                    std::to_string(cfg.total_size)},
                   &peer) ||
        !ReadLineWithPrefix(peer, "READY tcp-peer", 10000, &line)) {
      std::fprintf(stderr, "demo: the TCP baseline peer did not start\n");
      StopChild(target);
      StopChild(peer);
      return 1;
    }
    info.peer = {ip, peer_port};
  }
  int rc = 1;
  if (info.addr != 0) {
    rc = MeasureAndReport(cfg, info);
  } else {
    std::fprintf(stderr, "demo: the target did not report its buffer address\n");
  }
  StopChild(target);
  if (!cfg.no_baseline) StopChild(peer);
  return rc;
}

}  // namespace hixl_bench
