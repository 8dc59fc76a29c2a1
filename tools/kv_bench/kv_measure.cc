#include "kv_measure.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

namespace kv_bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace ld = llm_datadist;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Layers are released by the caller's "compute".
class ComputeGate : public ld::LayerSynchronizer {
 public:
  bool SynchronizeLayer(uint32_t layer, int32_t) override {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::minutes(2), [&] { return released_ >= static_cast<int64_t>(layer); });
  }
  void Release(int64_t layer) {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = layer;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t released_ = -1;
};

bool WriteLine(int fd, const std::string &line) {
  const std::string s = line + "\n";
  return write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
}

}  // namespace

bool Session::Start(const Geometry &g, const std::string &transport, int timeout_ms) {
  g_ = g;
  transport_ = transport;
  timeout_ms_ = timeout_ms;
  const std::string listen = "127.0.0.1:" + std::to_string(hixl_bench::FreePort(AF_INET));
  std::string line;
  const std::string geo = std::to_string(g.tensors) + "," + std::to_string(g.pool_blocks) + "," +
                          std::to_string(g.block_bytes);
  if (!hixl_bench::SpawnSelf({"--role", "target", "--listen", listen, "--transport", transport,
                              "--target-geometry", geo},
                             &child_) ||
      !hixl_bench::ReadLineWithPrefix(child_, "READY ", 120000, &line) ||
      std::sscanf(line.c_str(), "%ld %lu", &remote_cache_, &remote_base_) != 2) {
    std::fprintf(stderr, "kv_bench: the target process did not start\n");
    return false;
  }
  remote_ = listen;
  dd_ = std::make_unique<ld::LlmDataDist>(kBenchCluster, ld::LlmRole::kDecoder);
  if (dd_->Initialize(BenchOptions(transport, "")) != ld::LLM_SUCCESS ||
      dd_->AllocateCache(CacheDescOf(g), cache_) != ld::LLM_SUCCESS) {
    std::fprintf(stderr, "kv_bench: this side's LlmDataDist did not start\n");
    return false;
  }
  // A serving cache is in use: its pages are there. (Untouched, a request's
  // first writes would fault them in, which the contiguous transfer beside
  // it, always at the start, would not pay.)
  std::memset(reinterpret_cast<void *>(cache_.tensor_addrs[0]), 0, g.tensors * g.pool_blocks * g.block_bytes);
  ld::ClusterInfo info{};
  info.remote_cluster_id = kTargetCluster;
  ld::IpInfo ip{};
  ip.ip = "127.0.0.1";
  ip.port = static_cast<uint16_t>(std::stoi(listen.substr(listen.rfind(':') + 1)));
  info.remote_ip_infos.push_back(ip);
  std::vector<ld::Status> rets;
  if (dd_->LinkLlmClusters({info}, rets, 10000) != ld::LLM_SUCCESS) {
    std::fprintf(stderr, "kv_bench: cannot link to the target\n");
    return false;
  }
  // The baseline: a plain hixl engine over the same memory, to the same target.
  raw_ = std::make_unique<hixl::Hixl>();
  std::map<hixl::AscendString, hixl::AscendString> opts{
      {hixl::OPTION_BUFFER_POOL, "0:0"},
      {hixl::OPTION_GLOBAL_RESOURCE_CONFIG,
       ("{\"comm_resource_config.protocol_desc\": [\"" + transport + ":host\"]}").c_str()}};
  hixl::MemDesc mem{};
  mem.addr = cache_.tensor_addrs[0];
  mem.len = g.tensors * g.pool_blocks * g.block_bytes;
  hixl::MemHandle h = nullptr;
  if (raw_->Initialize("127.0.0.1", opts) != hixl::SUCCESS ||
      raw_->RegisterMem(mem, hixl::MEM_HOST, h) != hixl::SUCCESS ||
      raw_->Connect(remote_.c_str(), 10000) != hixl::SUCCESS) {
    std::fprintf(stderr, "kv_bench: the baseline engine did not connect\n");
    return false;
  }
  return true;
}

void Session::Stop() {
  if (raw_) raw_->Finalize();
  raw_.reset();
  if (dd_) dd_->Finalize();
  dd_.reset();
  if (child_.pid > 0) hixl_bench::StopChild(child_);
}

bool Session::Request(const std::string &mode, const std::vector<uint64_t> &src, const std::vector<uint64_t> &dst,
                      double *seconds, uint64_t *descriptors) {
  ld::KvCacheKey key{};
  key.cluster_id = kTargetCluster;
  key.cache_id = remote_cache_;
  ld::KvTransferReport report;
  const auto t0 = Clock::now();
  const ld::Status s = mode == "pull" ? dd_->PullKvBlocks(key, cache_, src, dst, ld::KvCacheExtParam{}, &report)
                                      : dd_->PushKvBlocks(cache_, key, src, dst, ld::KvCacheExtParam{}, &report);
  *seconds = Since(t0);
  *descriptors = report.descriptors;
  if (s != ld::LLM_SUCCESS) std::fprintf(stderr, "kv_bench: %s failed with status 0x%x\n", mode.c_str(), s);
  return s == ld::LLM_SUCCESS;
}

bool Session::Baseline(bool pull, uint64_t bytes, double *seconds) {
  std::vector<hixl::TransferOpDesc> one{{cache_.tensor_addrs[0], remote_base_, bytes}};
  const auto t0 = Clock::now();
  const hixl::Status s = raw_->TransferSync(remote_.c_str(), pull ? hixl::READ : hixl::WRITE, one, timeout_ms_);
  *seconds = Since(t0);
  return s == hixl::SUCCESS;
}

bool Session::LayerWise(const std::vector<uint64_t> &src, const std::vector<uint64_t> &dst, double compute_us,
                        int iter, double *exposed, uint64_t *descriptors) {
  const std::string tag = "req-" + std::to_string(iter);
  if (!WriteLine(child_.in_fd, "WAIT " + tag)) return false;
  auto gate = std::make_shared<ComputeGate>();
  ld::LayerTransferConfig cfg;
  cfg.dst.cluster_id = kTargetCluster;
  cfg.dst.cache_id = remote_cache_;
  ld::LayerPushOptions opts;
  opts.src_blocks = src;
  opts.dst_blocks = dst;
  opts.tensor_num_per_layer = static_cast<uint8_t>(g_.model.tensors_per_layer);
  opts.ready_tag = tag;
  std::shared_ptr<ld::CacheTask> task;
  const auto start = Clock::now();
  if (dd_->TransferCacheAsync(cache_, gate, {cfg}, opts, task) != ld::LLM_SUCCESS) return false;
  // The "prefill": layer l is computed at start + (l + 1) * compute_us.
  Clock::time_point last_end;
  for (int l = 0; l < g_.layers; ++l) {
    std::this_thread::sleep_until(start + std::chrono::nanoseconds(static_cast<int64_t>((l + 1) * compute_us * 1e3)));
    last_end = Clock::now();
    gate->Release(l);
  }
  std::string line;
  unsigned long ns = 0;
  unsigned status = 1;
  const bool seen = hixl_bench::ReadLineWithPrefix(child_, "SEEN ", 150000, &line) &&
                    std::sscanf(line.c_str(), "%lu %u", &ns, &status) == 2 && ns != 0;
  const ld::Status s = task->Synchronize(150000);
  const auto results = task->GetResults(0);
  *descriptors = results.empty() ? 0 : results[0].report.descriptors;
  const double ready = std::chrono::duration<double>(std::chrono::nanoseconds(ns)).count();
  *exposed = ready - std::chrono::duration<double>(last_end.time_since_epoch()).count();
  if (!seen || s != ld::LLM_SUCCESS || status != ld::LLM_SUCCESS) {
    std::fprintf(stderr, "kv_bench: layer-wise push: task status 0x%x, notice %s (status 0x%x)\n", s,
                 seen ? "seen" : "not seen", status);
    return false;
  }
  return true;
}

bool Session::Check(const std::string &mode, const std::vector<uint64_t> &src, const std::vector<uint64_t> &dst) {
  const uint32_t t = g_.tensors - 1;
  if (mode == "pull") {
    const auto *p = reinterpret_cast<const uint8_t *>(cache_.tensor_addrs[t] + dst[0] * g_.block_bytes);
    for (uint64_t i = 0; i < g_.block_bytes; ++i) {
      if (p[i] != PatternOf(t, src[0])) return false;
    }
    return true;
  }
  // Push: a block marked here must be at the target.
  std::memset(reinterpret_cast<void *>(cache_.tensor_addrs[t] + src[0] * g_.block_bytes), 0xA5, g_.block_bytes);
  double s = 0;
  uint64_t d = 0;
  if (!Request("push", src, dst, &s, &d)) return false;
  std::string line;
  return WriteLine(child_.in_fd, "CHECK " + std::to_string(t) + " " + std::to_string(dst[0]) + " 165") &&
         hixl_bench::ReadLineWithPrefix(child_, "CHECK ", 30000, &line) && line == "ok";
}

bool Session::Measure(const std::string &mode, const std::string &pattern, int iters, double compute_us,
                      RowResult *row) {
  row->mode = mode;
  row->pattern = pattern;
  row->transport = transport_;
  row->model = g_.model.name;
  row->layers = g_.layers;
  row->block_tokens = g_.block_tokens;
  row->prompt_tokens = g_.prompt_tokens;
  row->request_bytes = g_.request_bytes();
  row->blocks = g_.request_blocks;
  row->iters = iters;
  const bool layerwise = mode == "layerwise";
  const bool pull = mode == "pull";
  std::vector<double> kv, base, exposed, layer;
  std::vector<uint64_t> src, dst;
  for (int i = -1; i < iters; ++i) {  // -1: a warm-up, not counted
    if (!MakeBlocks(pattern, g_.request_blocks, g_.pool_blocks, rng_, &src, &dst)) return false;
    double t_kv = 0, t_base = 0, t_exp = 0;
    uint64_t descs = 0;
    // Alternate which goes first, so that neither always follows the other.
    const bool base_first = i % 2 != 0;
    if (base_first && !Baseline(pull, row->request_bytes, &t_base)) return false;
    if (layerwise) {
      const auto t0 = Clock::now();
      if (!LayerWise(src, dst, compute_us, i, &t_exp, &descs)) return false;
      t_kv = Since(t0);
      // One layer's push alone, the yardstick of the exposed time.
      ld::KvCacheKey key{};
      key.cluster_id = kTargetCluster;
      key.cache_id = remote_cache_;
      ld::KvCacheExtParam ext{};
      ext.src_layer_range = ext.dst_layer_range = {0, 0};
      ext.tensor_num_per_layer = static_cast<uint8_t>(g_.model.tensors_per_layer);
      const auto t1 = Clock::now();
      if (dd_->PushKvBlocks(cache_, key, src, dst, ext, nullptr) != ld::LLM_SUCCESS) return false;
      if (i >= 0) layer.push_back(Since(t1));
    } else if (!Request(mode, src, dst, &t_kv, &descs)) {
      return false;
    }
    if (!base_first && !Baseline(pull, row->request_bytes, &t_base)) return false;
    if (i < 0) continue;
    kv.push_back(t_kv);
    base.push_back(t_base);
    if (layerwise) exposed.push_back(t_exp);
    row->descriptors = descs;
  }
  row->kv_p50_ms = hixl_bench::Median(kv) * 1e3;
  row->kv_p99_ms = hixl_bench::Percentile(kv, 99) * 1e3;
  row->kv_gbps = row->request_bytes / hixl_bench::Median(kv) / 1e9;
  row->base_p50_ms = hixl_bench::Median(base) * 1e3;
  row->base_gbps = row->request_bytes / hixl_bench::Median(base) / 1e9;
  // The median of each request's ratio to the contiguous transfer next to
  // it: on a shared machine the pair sees the same load.
  std::vector<double> ratios;
  for (size_t i = 0; i < kv.size(); ++i) ratios.push_back(base[i] / kv[i]);
  row->ratio = hixl_bench::Median(ratios);
  if (layerwise) {
    row->compute_us = compute_us;
    row->exposed_p50_ms = hixl_bench::Median(exposed) * 1e3;
    row->exposed_p99_ms = hixl_bench::Percentile(exposed, 99) * 1e3;
    row->layer_p50_ms = hixl_bench::Median(layer) * 1e3;
    row->exposed_over_layer = row->exposed_p50_ms / row->layer_p50_ms;
  }
  row->checked = Check(layerwise ? "push" : mode, src, dst);
  return true;
}

}  // namespace kv_bench
