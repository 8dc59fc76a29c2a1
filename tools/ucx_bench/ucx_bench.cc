// hixl_ucx_bench: the UCX plug-in's own throughput and batch-posting time,
// measured like ucx_perftest's ucp_put_bw / ucp_get (scripts/ucx_baseline.sh
// runs both on the same UCX_TLS), so that hixl over ucx can be compared
// like with like. A second process (this program, --serve) is the target:
// it registers one region and then only serves, through the plug-in's
// progress thread.
//
//   hixl_ucx_bench --tls tcp --net-devices lo --op put --size 64K --runs 5
//   hixl_ucx_bench --tls sm --post 10000 --size 4K --runs 5
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "../bench/bench_util.h"
#include "support/pattern.h"
#include "transport/ucx/ucx_loader.h"

namespace {

using hixl_bench::Median;
using hixl_bench::NowSeconds;

struct Options {
  std::string tls = "tcp";
  std::string net_devices;
  std::string op = "put";
  std::string size_text = "64K";
  uint64_t size = 0;
  uint64_t total = 0;  // bytes per run; 0: as ucx_perftest's -n in scripts/ucx_baseline.sh
  int pieces = 16;     // per batch: with depth 2, ucp_put_bw's window of 32
  int depth = 2;       // batches in flight
  int runs = 5;
  int post = 0;        // > 0: time posting one batch of this many pieces instead
  bool serve = false;
  uint64_t region = 0;  // --serve: bytes to register
};

const hixl_ucx_api_t *Api() {
  const hixl::ucx::PluginLoad &load = hixl::ucx::LoadPlugin();
  if (load.api == nullptr) std::fprintf(stderr, "hixl_ucx_bench: %s\n", load.why_not.c_str());
  return load.api;
}

hixl_ucx_context_t *MakeContext(const hixl_ucx_api_t *api, const Options &o) {
  hixl_ucx_context_params_t p{};
  p.name = "hixl_ucx_bench";
  p.tls = o.tls.c_str();
  p.net_devices = o.net_devices.empty() ? nullptr : o.net_devices.c_str();
  p.traffic_class = -1;
  p.service_level = -1;
  hixl_ucx_context_t *ctx = nullptr;
  hixl_ucx_status_t st = api->context_create(&p, &ctx);
  if (st != HIXL_UCX_OK) std::fprintf(stderr, "context_create: %s\n", api->status_name(st));
  return ctx;
}

// The target: registers `region` bytes, prints where, serves until stdin closes.
int Serve(const Options &o) {
  const hixl_ucx_api_t *api = Api();
  hixl_ucx_context_t *ctx = api != nullptr ? MakeContext(api, o) : nullptr;
  if (ctx == nullptr) return 1;
  void *buf = hixl_bench::AllocBuffer(o.region);
  hixl_ucx_mem_t *mem = nullptr;
  const void *addr = nullptr, *key = nullptr;
  size_t addr_len = 0, key_len = 0;
  if (api->mem_register(ctx, buf, o.region, HIXL_UCX_MEM_HOST, HIXL_UCX_REMOTE_READ | HIXL_UCX_REMOTE_WRITE, &mem) != HIXL_UCX_OK ||
      api->mem_rkey(mem, &key, &key_len) != HIXL_UCX_OK || api->worker_address(ctx, &addr, &addr_len) != HIXL_UCX_OK) {
    return 1;
  }
  std::cout << "TARGET " << hixl_test::HexField(static_cast<const char *>(addr), addr_len) << " "
            << reinterpret_cast<uintptr_t>(buf) << " " << hixl_test::HexField(static_cast<const char *>(key), key_len)
            << std::endl;
  char c;
  while (std::cin.get(c)) {
  }
  api->mem_deregister(mem);
  api->context_destroy(ctx);
  hixl_bench::FreeBuffer(buf, o.region);
  return 0;
}

// Batches in flight, counted down by their callbacks.
struct Inflight {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  hixl_ucx_status_t first_error = HIXL_UCX_OK;
  static void OnDone(void *self, hixl_ucx_status_t st) {
    auto *f = static_cast<Inflight *>(self);
    std::lock_guard<std::mutex> lock(f->mu);
    --f->pending;
    if (st != HIXL_UCX_OK && f->first_error == HIXL_UCX_OK) f->first_error = st;
    f->cv.notify_all();
  }
  void Add(int n) {
    std::lock_guard<std::mutex> lock(mu);
    pending += n;
  }
  // Waits until at most `n` are pending; false on a failed batch.
  bool WaitAtMost(int n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return pending <= n; });
    return first_error == HIXL_UCX_OK;
  }
};

int Run(const Options &o) {
  hixl_bench::Child child;
  // The bandwidth runs use one message-sized buffer on each side for every
  // piece, as ucx_perftest does; --post gives each piece its own place.
  uint64_t region = o.post > 0 ? static_cast<uint64_t>(o.post) * o.size : o.size;
  std::vector<std::string> args = {"--serve", "--tls", o.tls, "--size", std::to_string(o.size), "--region",
                                   std::to_string(region)};
  if (!o.net_devices.empty()) args.insert(args.end(), {"--net-devices", o.net_devices});
  std::string line;
  if (!hixl_bench::SpawnSelf(args, &child) || !hixl_bench::ReadLineWithPrefix(child, "TARGET ", 30000, &line)) {
    std::fprintf(stderr, "the target did not start\n");
    return 1;
  }
  std::istringstream in(line);
  std::string addr_hex, key_hex;
  uint64_t raddr = 0;
  in >> addr_hex >> raddr >> key_hex;
  std::vector<uint8_t> peer = hixl_test::FromHex(addr_hex), key = hixl_test::FromHex(key_hex);

  const hixl_ucx_api_t *api = Api();
  hixl_ucx_context_t *ctx = api != nullptr ? MakeContext(api, o) : nullptr;
  hixl_ucx_ep_t *ep = nullptr;
  hixl_ucx_rkey_t *rkey = nullptr;
  if (ctx == nullptr || api->ep_create(ctx, peer.data(), peer.size(), nullptr, nullptr, &ep) != HIXL_UCX_OK ||
      api->rkey_unpack(ep, key.data(), key.size(), &rkey) != HIXL_UCX_OK) {
    hixl_bench::StopChild(child);
    return 1;
  }
  void *local = hixl_bench::AllocBuffer(region);
  auto lbase = reinterpret_cast<uint64_t>(local);
  hixl_ucx_op_t op = o.op == "get" ? HIXL_UCX_OP_GET : HIXL_UCX_OP_PUT;
  // Pieces in falling order (or all in one place): none is contiguous with
  // the one before, so nothing merges and each is one put or get.
  auto batch_of = [&](size_t n, bool one_place) {
    std::vector<hixl_ucx_piece_t> pieces;
    for (size_t i = n; i-- > 0;) {
      uint64_t off = one_place ? 0 : i * o.size;
      pieces.push_back({lbase + off, raddr + off, o.size, rkey});
    }
    return pieces;
  };
  bool ok = true;
  std::vector<double> results, posted, posting;
  // One untimed round warms up connections and registration caches.
  for (int run = -1; run < o.runs && ok; ++run) {
    Inflight f;
    if (o.post > 0) {
      std::vector<hixl_ucx_piece_t> pieces = batch_of(o.post, false);
      f.Add(1);
      double t0 = NowSeconds();
      ok = api->batch_post(ep, op, pieces.data(), pieces.size(), Inflight::OnDone, &f) == HIXL_UCX_OK;
      double t1 = NowSeconds();
      if (!ok) f.Add(-1);
      bool done_ok = f.WaitAtMost(0);
      ok = ok && done_ok;
      double t2 = NowSeconds();
      hixl_ucx_ep_stats_t s{};
      api->ep_stats(ep, &s);
      if (run >= 0) {
        posted.push_back((t1 - t0) * 1e3);
        posting.push_back(s.last_post_ns / 1e6);
        results.push_back((t2 - t0) * 1e3);
      }
      continue;
    }
    uint64_t total = o.total > 0 ? o.total : o.size * 2000;
    uint64_t batch_bytes = o.size * o.pieces;
    uint64_t batches = (total + batch_bytes - 1) / batch_bytes;
    std::vector<hixl_ucx_piece_t> pieces = batch_of(o.pieces, true);
    double t0 = NowSeconds();
    for (uint64_t b = 0; b < batches && ok; ++b) {
      ok = f.WaitAtMost(o.depth - 1);
      if (!ok) break;
      f.Add(1);
      ok = api->batch_post(ep, op, pieces.data(), pieces.size(), Inflight::OnDone, &f) == HIXL_UCX_OK;
      if (!ok) f.Add(-1);
    }
    bool drained_ok = f.WaitAtMost(0);  // nothing may call back into `f` once it is gone
    ok = ok && drained_ok;
    double secs = NowSeconds() - t0;
    if (run >= 0) results.push_back(batches * batch_bytes / secs / (1 << 20));
  }
  if (!ok) std::fprintf(stderr, "a batch failed\n");
  std::string what = o.tls + " " + o.op + " " + hixl_bench::FormatSize(o.size);
  if (ok && o.post > 0) {
    std::printf("%s x %d: batch_post returned after %.3f ms, posted by the progress thread in %.3f ms, done in "
                "%.3f ms (medians of %d)\n",
                what.c_str(), o.post, Median(posted), Median(posting), Median(results), o.runs);
  } else if (ok) {
    std::printf("%s: %.1f MiB/s median of %d runs (", what.c_str(), Median(results), o.runs);
    for (size_t i = 0; i < results.size(); ++i) std::printf("%s%.1f", i ? " " : "", results[i]);
    std::printf(")\n");
  }
  api->ep_destroy(ep, 1000);
  api->context_destroy(ctx);
  hixl_bench::FreeBuffer(local, region);
  hixl_bench::StopChild(child);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  CLI::App app{"hixl_ucx_bench: the UCX plug-in's throughput and batch-posting time"};
  app.add_option("--tls", o.tls, "UCX_TLS of both sides (a UCX_TLS in the environment wins)");
  app.add_option("--net-devices", o.net_devices, "UCX_NET_DEVICES of both sides");
  app.add_option("--op", o.op, "put or get")->check(CLI::IsMember({"put", "get"}));
  app.add_option("--size", o.size_text, "bytes per piece (4K, 64K, 1M)");
  app.add_option("--total", o.total, "bytes per run (default: 2000 pieces)");
  app.add_option("--pieces", o.pieces, "pieces per batch")->check(CLI::PositiveNumber);
  app.add_option("--depth", o.depth, "batches in flight")->check(CLI::PositiveNumber);
  app.add_option("--runs", o.runs, "timed runs (after one untimed)")->check(CLI::PositiveNumber);
  app.add_option("--post", o.post, "time one batch of this many pieces instead");
  app.add_flag("--serve", o.serve, "be the target (internal)");
  app.add_option("--region", o.region, "bytes the target registers (internal)");
  CLI11_PARSE(app, argc, argv);
  if (!hixl_bench::ParseSize(o.size_text, &o.size) || o.size == 0) {
    std::fprintf(stderr, "bad --size %s\n", o.size_text.c_str());
    return 2;
  }
  return o.serve ? Serve(o) : Run(o);
}
