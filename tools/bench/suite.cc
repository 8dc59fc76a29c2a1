#include "suite.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>

#include "baselines.h"
#include "bench_util.h"
#include "hixl_runner.h"
#include "workload.h"

namespace hixl_bench {
namespace {

bool Contains(const std::vector<uint64_t> &v, uint64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

class PlanBuilder {
 public:
  explicit PlanBuilder(const BenchConfig &cfg) : cfg_(cfg) {}

  // Adds `p` (batch 0: the default for its mode) unless it does not fit.
  void Add(Point p, uint64_t batch) {
    const uint64_t n = BlocksPerThread(p, cfg_.total_size);
    if (n == 0) {
      Note("block " + FormatSize(p.block) + " x " + std::to_string(p.threads) + " thread(s) does not fit in " +
           FormatSize(cfg_.total_size) + " (--total-size): skipped");
      return;
    }
    // Sync: the whole slice in one call; async: one block per request, so
    // that depth is what overlaps them.
    if (batch == 0) batch = p.mode == Mode::kSync ? n : 1;
    if (batch > n) {
      Note("batch " + std::to_string(batch) + " > " + std::to_string(n) + " blocks of " + FormatSize(p.block) +
           " per thread: using " + std::to_string(n));
      batch = n;
    }
    p.batch = batch;
    if (p.mode == Mode::kSync) p.depth = 1;
    plan_.points.push_back(p);
  }

  void Note(const std::string &n) {
    if (seen_.insert(n).second) plan_.notes.push_back(n);
  }

  Plan Take() { return std::move(plan_); }

 private:
  const BenchConfig &cfg_;
  Plan plan_;
  std::set<std::string> seen_;
};

// The flags' own product: transports x ops x blocks x batches x threads
// (x depths when async).
void AddSweep(const BenchConfig &cfg, const std::string &transport, PlanBuilder *b) {
  for (auto op : cfg.ops) {
    for (uint64_t block : cfg.block_sizes) {
      for (uint64_t batch : cfg.batches) {
        for (int threads : cfg.threads) {
          std::vector<int> depths = cfg.mode == Mode::kAsync ? cfg.depths : std::vector<int>{1};
          for (int depth : depths) {
            b->Add({transport, op, cfg.mode, cfg.layout, block, 0, threads, depth}, batch);
          }
        }
      }
    }
  }
}

// The preset: the block sweep (sync, one thread, one call), then the batch,
// thread and async sweeps at the block sizes where they tell most, and a
// contiguous reference at the smallest block.
void AddSuite(const BenchConfig &cfg, const std::string &transport, PlanBuilder *b) {
  const auto &blocks = cfg.block_sizes;
  const uint64_t k64 = 64u << 10, m1 = 1u << 20;
  for (auto op : cfg.ops) {
    for (uint64_t block : blocks) b->Add({transport, op, Mode::kSync, Layout::kScattered, block, 0, 1, 1}, 0);
  }
  for (auto op : cfg.ops) {
    if (!Contains(blocks, k64)) break;
    const Point p{transport, op, Mode::kSync, Layout::kScattered, k64, 0, 1, 1};
    for (uint64_t batch : cfg.suite_batches) {
      // A batch of every block is the block sweep's point already.
      if (batch < BlocksPerThread(p, cfg.total_size)) b->Add(p, batch);
    }
  }
  for (auto op : cfg.ops) {
    for (uint64_t block : {k64, m1}) {
      if (!Contains(blocks, block)) continue;
      for (int t : cfg.suite_threads) {
        if (t > 1) b->Add({transport, op, Mode::kSync, Layout::kScattered, block, 0, t, 1}, 0);
      }
    }
  }
  for (auto op : cfg.ops) {
    for (int d : cfg.suite_depths) b->Add({transport, op, Mode::kAsync, Layout::kScattered, k64, 0, 1, d}, 0);
  }
  const uint64_t smallest = *std::min_element(blocks.begin(), blocks.end());
  for (auto op : cfg.ops) b->Add({transport, op, Mode::kSync, Layout::kContiguous, smallest, 0, 1, 1}, 0);
}

void Progress(const ThroughputResult &x) {
  const Point &p = x.point;
  const std::string mode = ModeText(p);
  std::fprintf(stderr, "  %s %s %s %s %s batch %llu thr %d: hixl %.2f GB/s", p.transport.c_str(), OpName(p.op),
               mode.c_str(), LayoutName(p.layout), FormatSize(p.block).c_str(),
               static_cast<unsigned long long>(p.batch), p.threads, x.gbps);
  if (x.baseline != "none") {
    std::fprintf(stderr, ", %s %.2f GB/s, ratio %.2f", x.baseline.c_str(), x.baseline_gbps, x.ratio);
  }
  if (p.mode == Mode::kAsync) std::fprintf(stderr, "; longest TransferAsync %.0f us", x.post_max_us);
  std::fprintf(stderr, "\n");
}

// Measures one point: a warm-up of each, then `iters` rounds of one hixl
// and one baseline iteration, in alternating order so that neither always
// runs on the other's leftovers (page cache, socket buffers, CPU clocks).
bool MeasurePoint(const BenchConfig &cfg, HixlInitiator &ini, Baseline *base, const Point &p, Report *report) {
  Workload w;
  if (!BuildWorkload(p, cfg.total_size, ini.local_addr(), ini.remote_addr(), &w)) return false;
  RepeatWorkload(cfg.repeat, &w);
  std::string why;
  if (base != nullptr && !base->Prepare(w, &why)) {
    report->notes.push_back(std::string("baseline ") + base->name() + " unavailable: " + why);
    base = nullptr;
  }
  std::vector<double> th, tb, posts;
  auto hixl_once = [&] {
    th.push_back(ini.RunOnce(w));
    posts.push_back(ini.last_post_max() * 1e6);
    return th.back() >= 0;
  };
  auto base_once = [&] {
    if (base == nullptr) return true;
    tb.push_back(base->RunOnce());
    return tb.back() >= 0;
  };
  if (!hixl_once() || !base_once()) return false;  // warm-up
  th.clear();
  tb.clear();
  posts.clear();
  for (int i = 0; i < cfg.iters; ++i) {
    const bool ok = (i % 2) == 0 ? hixl_once() && base_once() : base_once() && hixl_once();
    if (!ok) return false;
  }
  ThroughputResult x;
  x.point = p;
  x.bytes = w.bytes;
  x.iters = cfg.iters;
  x.gbps = static_cast<double>(w.bytes) / Median(th) / 1e9;
  x.post_max_us = Median(posts);
  x.baseline = base != nullptr ? base->name() : "none";
  if (base != nullptr) {
    x.baseline_gbps = static_cast<double>(w.bytes) / Median(tb) / 1e9;
    x.ratio = x.gbps / x.baseline_gbps;
  }
  Progress(x);
  report->results.push_back(x);
  return true;
}

// Every point, latency and connect figure of one transport.
bool MeasureTransport(const BenchConfig &cfg, const Plan &plan, const TargetInfo &target,
                      const std::string &transport, HixlInitiator &ini, Report *report) {
  // The yardstick: what the same bytes cost without hixl, by the means the
  // transport stands in for.
  std::unique_ptr<Baseline> base;
  if (!cfg.no_baseline) {
    if (transport == "tcp" && target.peer.port > 0) {
      base = MakeTcpBaseline(target.peer.host, target.peer.port, cfg.total_size);
    } else if (transport != "tcp") {
      base = MakeMemcpyBaseline(ini.buffer(), cfg.total_size);
    }
  }
  for (const auto &p : plan.points) {
    if (p.transport == transport && !MeasurePoint(cfg, ini, base.get(), p, report)) return false;
  }
  base.reset();
  const TcpPeerAddress peer = cfg.no_baseline ? TcpPeerAddress{} : target.peer;
  for (const auto &lp : plan.latency) {
    if (lp.transport != transport) continue;
    LatencyResult l;
    if (!MeasureLatency(ini, peer, lp, cfg.latency_samples, &l)) return false;
    std::fprintf(stderr, "  latency %s %s: p50 %.1f us, p99 %.1f us\n", OpName(lp.op), FormatSize(lp.size).c_str(),
                 l.p50_us, l.p99_us);
    report->latency.push_back(l);
  }
  if (plan.connect) {
    ConnectResult c;
    if (!MeasureConnect(ini, transport, peer, cfg.connect_samples, cfg.latency_size, &c)) return false;
    std::fprintf(stderr, "  connect-to-first-byte: p50 %.3f ms, p99 %.3f ms\n", c.p50_ms, c.p99_ms);
    report->connect.push_back(c);
  }
  return true;
}

}  // namespace

Plan BuildPlan(const BenchConfig &cfg) {
  PlanBuilder b(cfg);
  for (const auto &t : cfg.transports) {
    if (!cfg.throughput) break;
    if (cfg.suite) {
      AddSuite(cfg, t, &b);
    } else {
      AddSweep(cfg, t, &b);
    }
  }
  Plan plan = b.Take();
  if (cfg.latency || cfg.suite) {
    for (const auto &t : cfg.transports) {
      for (auto op : cfg.ops) plan.latency.push_back({t, op, cfg.latency_size});
    }
  }
  plan.connect = cfg.connect_latency || cfg.suite;
  return plan;
}

int RunPlan(const BenchConfig &cfg, const Plan &plan, const TargetInfo &target, Report *report) {
  report->notes.insert(report->notes.end(), plan.notes.begin(), plan.notes.end());
  int available = 0;
  bool failed = false;
  for (const auto &transport : cfg.transports) {
    HixlInitiator ini;
    std::string why;
    std::fprintf(stderr, "transport %s:\n", transport.c_str());
    if (!ini.Setup(cfg, transport, target.local_host, target.engine, target.addr, &why)) {
      std::fprintf(stderr, "  unavailable: %s; continuing without it\n", why.c_str());
      report->transports.push_back({transport, false, why});
      continue;
    }
    report->transports.push_back({transport, true, ""});
    ++available;
    // A failure ends this transport's measurements, not the others'.
    if (!MeasureTransport(cfg, plan, target, transport, ini, report)) {
      failed = true;
      report->notes.push_back("transport " + transport + ": a measurement failed (see stderr); its remaining "
                              "points were skipped");
    }
  }
  if (available == 0) std::fprintf(stderr, "no transport was available\n");
  return available == 0 || failed ? 1 : 0;
}

}  // namespace hixl_bench
