#include "report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_util.h"

namespace hixl_bench {
namespace {

using Json = nlohmann::ordered_json;

// Rounded so that the JSON stays readable; 4 significant digits are more
// than these measurements can claim.
double Round(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  double mag = std::pow(10.0, 3 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * mag) / mag;
}

// A figure for JSON, rounded; non-finite numbers become null, and so does a
// figure that is not `present` (a baseline that was not measured).
Json Num(double v, bool present = true) {
  return present && std::isfinite(v) ? Json(Round(v)) : Json(nullptr);
}

std::string FirstLineWith(const char *path, const char *key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) return line;
      size_t start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

std::string LoadAverage() {
  std::ifstream load("/proc/loadavg");
  std::string l1;
  load >> l1;
  return l1;
}

Json HostJson(const HostInfo &h) {
  Json j;
  j["os"] = h.os;
  j["kernel"] = h.kernel;
  j["machine"] = h.machine;
  j["cpus"] = h.cpus;
  j["cpu_model"] = h.cpu_model;
  j["mem_total"] = h.mem_total;
  j["loadavg_1min_at_start"] = h.loadavg_start;
  j["loadavg_1min_at_end"] = LoadAverage();
  j["date"] = h.date_start;
  return j;
}

Json ConfigJson(const BenchConfig &cfg) {
  Json c;
  c["command"] = cfg.command_line;
  c["transports"] = cfg.transports;
  Json ops = Json::array();
  for (auto op : cfg.ops) ops.push_back(OpName(op));
  c["ops"] = ops;
  c["block_sizes"] = cfg.block_sizes;
  c["total_size"] = cfg.total_size;
  c["iters"] = cfg.iters;
  c["repeat"] = cfg.repeat;
  c["timeout_ms"] = cfg.timeout_ms;
  c["streams_per_link"] = cfg.streams;
  c["layout"] = LayoutName(cfg.layout);
  c["mode"] = ModeName(cfg.mode);
  c["batches"] = cfg.batches;
  c["threads"] = cfg.threads;
  c["depths"] = cfg.depths;
  c["suite_batches"] = cfg.suite_batches;
  c["suite_threads"] = cfg.suite_threads;
  c["suite_depths"] = cfg.suite_depths;
  c["latency_size"] = cfg.latency_size;
  c["suite"] = cfg.suite;
  c["ipv6"] = cfg.ipv6;
  c["latency_samples"] = cfg.latency_samples;
  c["connect_samples"] = cfg.connect_samples;
  return c;
}

bool HasLayouts(const std::vector<ThroughputResult> &rows) {
  for (const auto &r : rows) {
    if (r.point.layout != Layout::kScattered) return true;
  }
  return false;
}

}  // namespace

HostInfo ReadHostInfo() {
  HostInfo h;
  utsname u{};
  uname(&u);
  h.os = u.sysname;
  h.kernel = u.release;
  h.machine = u.machine;
  h.cpus = sysconf(_SC_NPROCESSORS_ONLN);
  h.cpu_model = FirstLineWith("/proc/cpuinfo", "model name");
  h.mem_total = FirstLineWith("/proc/meminfo", "MemTotal");
  h.loadavg_start = LoadAverage();
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  h.date_start = date;
  return h;
}

void PrintThroughputTable(const std::vector<ThroughputResult> &rows) {
  if (rows.empty()) return;
  const bool layout = HasLayouts(rows);
  std::printf("\n%-9s %-6s %-9s %6s%s %7s %4s %10s %8s %10s %7s\n", "transport", "op", "mode", "block",
              layout ? "     layout" : "", "batch", "thr", "hixl GB/s", "baseline", "base GB/s", "ratio");
  for (const auto &r : rows) {
    const Point &p = r.point;
    std::printf("%-9s %-6s %-9s %6s", p.transport.c_str(), OpName(p.op), ModeText(p).c_str(),
                FormatSize(p.block).c_str());
    if (layout) std::printf(" %10s", LayoutName(p.layout));
    std::printf(" %7" PRIu64 " %4d %10.2f %8s", p.batch, p.threads, r.gbps, r.baseline.c_str());
    if (r.baseline != "none") {
      std::printf(" %10.2f %7.2f", r.baseline_gbps, r.ratio);
    } else {
      std::printf(" %10s %7s", "-", "-");
    }
    std::printf("\n");
  }
}

void PrintReport(const Report &r) {
  for (const auto &t : r.transports) {
    if (!t.available) std::printf("\ntransport %s: unavailable (%s)\n", t.name.c_str(), t.reason.c_str());
  }
  PrintThroughputTable(r.results);
  if (!r.latency.empty()) {
    std::printf("\n%-9s %-6s %6s %8s %9s %9s %9s %9s %9s\n", "transport", "op", "size", "samples", "p50 us",
                "p99 us", "tcp p50", "tcp p99", "ratio p50");
    for (const auto &l : r.latency) {
      std::printf("%-9s %-6s %6s %8d %9.1f %9.1f", l.transport.c_str(), OpName(l.op), FormatSize(l.size).c_str(),
                  l.samples, l.p50_us, l.p99_us);
      if (l.baseline != "none") {
        std::printf(" %9.1f %9.1f %9.2f\n", l.baseline_p50_us, l.baseline_p99_us, l.ratio_p50);
      } else {
        std::printf(" %9s %9s %9s\n", "-", "-", "-");
      }
    }
  }
  if (!r.connect.empty()) {
    std::printf("\n%-9s %8s %14s %14s %14s %14s\n", "transport", "samples", "connect p50 ms", "connect p99 ms",
                "tcp p50 ms", "tcp p99 ms");
    for (const auto &c : r.connect) {
      std::printf("%-9s %8d %14.3f %14.3f", c.transport.c_str(), c.samples, c.p50_ms, c.p99_ms);
      if (c.baseline != "none") {
        std::printf(" %14.3f %14.3f\n", c.baseline_p50_ms, c.baseline_p99_ms);
      } else {
        std::printf(" %14s %14s\n", "-", "-");
      }
    }
  }
  if (!r.goals.empty()) {
    std::printf("\n%-48s %-14s %-40s %s\n", "goal", "target", "measured", "met");
    for (const auto &g : r.goals) {
      std::printf("%-48s %-14s %-40s %s\n", g.name.c_str(), g.target.c_str(), g.measured.c_str(),
                  g.met ? "yes" : "NO");
    }
  }
  for (const auto &n : r.notes) std::printf("note: %s\n", n.c_str());
  std::fflush(stdout);
}

bool WriteJson(const Report &r, const BenchConfig &cfg, const std::string &path) {
  Json j;
  j["tool"] = "hixl_bench";
  j["version"] = 1;
  j["host"] = HostJson(r.host);
  j["config"] = ConfigJson(cfg);
  Json transports = Json::array();
  for (const auto &t : r.transports) {
    Json e;
    e["name"] = t.name;
    e["available"] = t.available;
    if (!t.available) e["reason"] = t.reason;
    transports.push_back(e);
  }
  j["transports"] = transports;
  Json results = Json::array();
  for (const auto &x : r.results) {
    const Point &p = x.point;
    Json e;
    e["transport"] = p.transport;
    e["op"] = OpName(p.op);
    e["mode"] = ModeName(p.mode);
    e["layout"] = LayoutName(p.layout);
    e["block"] = p.block;
    e["batch"] = p.batch;
    e["threads"] = p.threads;
    e["depth"] = p.depth;
    e["bytes"] = x.bytes;
    e["iters"] = x.iters;
    e["gbps"] = Num(x.gbps);
    e["baseline"] = x.baseline;
    e["baseline_gbps"] = Num(x.baseline_gbps, x.baseline != "none");
    e["ratio"] = Num(x.ratio, x.baseline != "none");
    e["post_max_us"] = Num(x.post_max_us, p.mode == Mode::kAsync);
    results.push_back(e);
  }
  j["results"] = results;
  Json latency = Json::array();
  for (const auto &l : r.latency) {
    Json e;
    e["transport"] = l.transport;
    e["op"] = OpName(l.op);
    e["size"] = l.size;
    e["samples"] = l.samples;
    e["p50_us"] = Num(l.p50_us);
    e["p99_us"] = Num(l.p99_us);
    e["baseline"] = l.baseline;
    const bool none = l.baseline == "none";
    e["baseline_p50_us"] = Num(l.baseline_p50_us, !none);
    e["baseline_p99_us"] = Num(l.baseline_p99_us, !none);
    e["ratio_p50"] = Num(l.ratio_p50, !none);
    latency.push_back(e);
  }
  j["latency"] = latency;
  Json connect = Json::array();
  for (const auto &c : r.connect) {
    Json e;
    e["transport"] = c.transport;
    e["samples"] = c.samples;
    e["p50_ms"] = Num(c.p50_ms);
    e["p99_ms"] = Num(c.p99_ms);
    e["baseline"] = c.baseline;
    const bool none = c.baseline == "none";
    e["baseline_p50_ms"] = Num(c.baseline_p50_ms, !none);
    e["baseline_p99_ms"] = Num(c.baseline_p99_ms, !none);
    connect.push_back(e);
  }
  j["connect"] = connect;
  Json goals = Json::array();
  for (const auto &g : r.goals) goals.push_back({{"name", g.name}, {"target", g.target}, {"measured", g.measured},
                                                 {"met", g.met}});
  j["goals"] = goals;
  j["notes"] = r.notes;
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

bool WriteCsv(const Report &r, const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  std::fprintf(f, "transport,op,mode,layout,block,batch,threads,depth,bytes,iters,gbps,baseline,baseline_gbps,ratio\n");
  for (const auto &x : r.results) {
    const Point &p = x.point;
    std::fprintf(f, "%s,%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%d,%d,%" PRIu64 ",%d,%.4g,%s,", p.transport.c_str(),
                 OpName(p.op), ModeName(p.mode), LayoutName(p.layout), p.block, p.batch, p.threads, p.depth, x.bytes,
                 x.iters, x.gbps, x.baseline.c_str());
    if (x.baseline == "none") {
      std::fprintf(f, ",\n");
    } else {
      std::fprintf(f, "%.4g,%.4g\n", x.baseline_gbps, x.ratio);
    }
  }
  bool ok = std::fclose(f) == 0;
  if (!ok) std::fprintf(stderr, "cannot write %s\n", path.c_str());
  return ok;
}

}  // namespace hixl_bench
