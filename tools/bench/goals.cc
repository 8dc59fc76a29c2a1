#include "goals.h"

#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bench_util.h"

namespace hixl_bench {
namespace {

std::string Fmt(const char *fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof(b), fmt, v);
  return b;
}

// The plain sweep point: one thread, one call per iteration, sync, tcp.
bool IsPlainTcpSync(const ThroughputResult &x) {
  const Point &p = x.point;
  return p.transport == "tcp" && p.mode == Mode::kSync && p.threads == 1 && p.layout == Layout::kScattered &&
         p.batch * p.block == x.bytes && x.baseline == "tcp";
}

// The worst ratio among plain tcp points whose block satisfies `pick`.
void WorstRatio(const Report &r, const std::string &name, double min_ratio, const std::function<bool(uint64_t)> &pick,
                std::vector<Goal> *out) {
  const ThroughputResult *worst = nullptr;
  std::vector<double> ratios;
  for (const auto &x : r.results) {
    if (!IsPlainTcpSync(x) || !pick(x.point.block)) continue;
    ratios.push_back(x.ratio);
    if (worst == nullptr || x.ratio < worst->ratio) worst = &x;
  }
  if (worst == nullptr) return;
  Goal g;
  g.name = name;
  g.target = Fmt("ratio >= %.1f", min_ratio);
  // Met by the worst point; the median says whether a miss is one noisy
  // point or the whole range.
  g.measured = Fmt("%.2f", worst->ratio) + " (worst: " + OpName(worst->point.op) + " " +
               FormatSize(worst->point.block) + ")";
  if (ratios.size() > 1) g.measured += Fmt(", median %.2f", Median(ratios));
  g.met = worst->ratio >= min_ratio;
  out->push_back(g);
}

}  // namespace

std::vector<Goal> EvaluateGoals(const Report &r) {
  std::vector<Goal> goals;
  WorstRatio(r, "tcp sync, blocks >= 256K, vs plain socket", 0.9, [](uint64_t b) { return b >= (256u << 10); },
             &goals);
  WorstRatio(r, "tcp sync, 16K blocks, vs plain socket", 0.7, [](uint64_t b) { return b == (16u << 10); }, &goals);
  WorstRatio(r, "tcp sync, 4K blocks, vs plain socket", 0.5, [](uint64_t b) { return b == (4u << 10); }, &goals);

  // Async depth 16 with 64K blocks against sync with 1M blocks, per op.
  for (auto op : {hixl::WRITE, hixl::READ}) {
    const ThroughputResult *async = nullptr, *sync = nullptr;
    for (const auto &x : r.results) {
      const Point &p = x.point;
      if (p.transport != "tcp" || p.op != op || p.threads != 1) continue;
      if (p.mode == Mode::kAsync && p.depth == 16 && p.block == (64u << 10)) async = &x;
      if (IsPlainTcpSync(x) && p.block == (1u << 20)) sync = &x;
    }
    if (async == nullptr || sync == nullptr) continue;
    Goal g;
    g.name = std::string("tcp ") + OpName(op) + ": async d16 64K vs sync 1M";
    g.target = "ratio >= 1.0";
    g.measured = Fmt("%.2f", async->gbps / sync->gbps) + Fmt(" (%.2f vs ", async->gbps) + Fmt("%.2f GB/s)", sync->gbps);
    g.met = async->gbps >= sync->gbps;
    goals.push_back(g);
  }

  const LatencyResult *worst_lat = nullptr;
  for (const auto &l : r.latency) {
    if (l.transport == "tcp" && l.size == 64 && l.baseline != "none" &&
        (worst_lat == nullptr || l.ratio_p50 > worst_lat->ratio_p50)) {
      worst_lat = &l;
    }
  }
  if (worst_lat != nullptr) {
    Goal g;
    g.name = "tcp 64 B TransferSync p50 vs TCP ping-pong p50";
    g.target = "ratio <= 1.5";
    g.measured = Fmt("%.2f", worst_lat->ratio_p50) + " (worst: " + OpName(worst_lat->op) +
                 Fmt(", %.1f us)", worst_lat->p50_us);
    g.met = worst_lat->ratio_p50 <= 1.5;
    goals.push_back(g);
  }
  for (const auto &c : r.connect) {
    if (c.transport != "tcp") continue;
    Goal g;
    g.name = "tcp connect-to-first-byte p50";
    g.target = "< 2 ms";
    g.measured = Fmt("%.3f ms", c.p50_ms);
    g.met = c.p50_ms < 2.0;
    goals.push_back(g);
  }
  return goals;
}

}  // namespace hixl_bench
