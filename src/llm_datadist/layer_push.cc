// layer_push.cc: layer-wise pushes (TransferCacheAsync) and CacheTask.
#include "layer_push.h"

#include <algorithm>
#include <cinttypes>

#include "datadist_impl.h"
#include "layer_range.h"
#include "llm_log.h"

namespace llm_datadist {
namespace {

// One destination, planned.
struct Destination {
  LayerTransferConfig config;
  PeerLink link;
  int32_t first_layer = 0;  // source layers [first_layer, last_layer]
  int32_t last_layer = -1;
  std::vector<TransferPlan> plans;  // one per source layer of the range
  std::vector<PlanUnit> units;      // shared by every layer
  LayerPushResult result;
  bool done = false;
};

std::vector<int32_t> LayersFrom(int32_t first, int32_t last) {
  std::vector<int32_t> out;
  for (int32_t l = first; l <= last; ++l) out.push_back(l);
  return out;
}

}  // namespace

void CacheTask::Impl::Start(std::function<void(Impl *)> body) {
  std::lock_guard<std::mutex> lock(join_mu_);
  thread_ = std::thread([self = shared_from_this(), body] { body(self.get()); });
}

void CacheTask::Impl::Join() {
  std::lock_guard<std::mutex> lock(join_mu_);
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // the last reference went away on the task's own thread
    return;
  }
  thread_.join();
}

void CacheTask::Impl::Update(size_t destination, const LayerPushResult &result) {
  std::lock_guard<std::mutex> lock(mu_);
  results_[destination] = result;
}

void CacheTask::Impl::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  cv_.notify_all();
}

bool CacheTask::Impl::finished() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

bool CacheTask::Impl::WaitDone(int32_t timeout_ms, std::unique_lock<std::mutex> &lock) {
  if (timeout_ms < 0) {
    cv_.wait(lock, [this] { return done_; });
    return true;
  }
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return done_; });
}

Status CacheTask::Impl::Synchronize(int32_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!WaitDone(timeout_ms, lock)) return LLM_TIMEOUT;
  for (const auto &r : results_) {
    if (r.status != LLM_SUCCESS) return r.status;
  }
  return LLM_SUCCESS;
}

std::vector<LayerPushResult> CacheTask::Impl::Results(int32_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool done = WaitDone(timeout_ms, lock);
  std::vector<LayerPushResult> out = results_;
  if (!done) {
    for (auto &r : out) r.status = LLM_TIMEOUT;
  }
  return out;
}

CacheTask::CacheTask(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
CacheTask::~CacheTask() = default;
Status CacheTask::Synchronize(int32_t timeout_in_millis) { return impl_->Synchronize(timeout_in_millis); }
std::vector<LayerPushResult> CacheTask::GetResults(int32_t timeout_in_millis) {
  return impl_->Results(timeout_in_millis);
}

LayerSynchronizer::~LayerSynchronizer() = default;

Status LlmDataDist::LlmDataDistImpl::TransferCacheAsync(const Cache &src_cache,
                                                        std::shared_ptr<LayerSynchronizer> synchronizer,
                                                        const std::vector<LayerTransferConfig> &configs,
                                                        const LayerPushOptions &options,
                                                        std::shared_ptr<CacheTask> &task) {
  static const char kCall[] = "TransferCacheAsync";
  if (synchronizer == nullptr || configs.empty() || options.tensor_num_per_layer == 0) {
    LLM_LOGE("%s: needs a synchronizer, a destination and tensor_num_per_layer > 0", kCall);
    return LLM_PARAM_INVALID;
  }
  const bool src_blocks = !options.src_blocks.empty();
  const bool dst_blocks = !options.dst_blocks.empty();
  if (src_blocks && (!dst_blocks || options.src_blocks.size() != options.dst_blocks.size())) {
    LLM_LOGE("%s: %zu source and %zu destination blocks (blocks go to as many blocks; blocks to a cache is not "
             "supported)",
             kCall, options.src_blocks.size(), options.dst_blocks.size());
    return LLM_PARAM_INVALID;
  }
  const Clock::time_point start = Clock::now();
  std::vector<Destination> dests(configs.size());
  const uint32_t per = options.tensor_num_per_layer;
  for (size_t c = 0; c < configs.size(); ++c) {
    Destination &d = dests[c];
    d.config = configs[c];
    const LayerTransferConfig &cfg = configs[c];
    LocalCache local;
    RemoteCache rc;
    Status s;
    KvCacheKey key = cfg.dst;
    const bool by_addr = !cfg.dst_addrs.empty();
    if (by_addr) {
      // TransferConfig: the peer's addresses, no table; only the link is needed.
      s = LookupLocal(kCall, src_cache.cache_id, &local);
      std::lock_guard<std::mutex> lock(mu_);
      auto it = links_.find(key.cluster_id);
      if (s == LLM_SUCCESS && it == links_.end()) {
        LLM_LOGE("%s: cluster %" PRIu64 " is not linked", kCall, key.cluster_id);
        s = LLM_NOT_YET_LINK;
      }
      if (s == LLM_SUCCESS) d.link = it->second;
    } else {
      s = Resolve(kCall, src_cache.cache_id, key, DeadlineFromNow(options.timeout_in_millis), &local, &d.link, &rc);
    }
    if (s != LLM_SUCCESS) return s;
    if (local.desc.num_tensors % per != 0) {
      LLM_LOGE("%s: %u tensors are not layers of %u", kCall, local.desc.num_tensors, per);
      return LLM_PARAM_INVALID;
    }
    const int32_t layers = static_cast<int32_t>(local.desc.num_tensors / per);
    KvCacheExtParam ext;
    ext.src_layer_range = cfg.src_layer_range;
    ext.dst_layer_range = cfg.dst_layer_range;
    ext.tensor_num_per_layer = options.tensor_num_per_layer;
    if ((s = CheckExtParam(kCall, ext, true)) != LLM_SUCCESS) return s;
    d.first_layer = cfg.src_layer_range.first < 0 ? 0 : cfg.src_layer_range.first;
    d.last_layer = cfg.src_layer_range.first < 0 ? layers - 1 : cfg.src_layer_range.second;
    const int32_t count = d.last_layer - d.first_layer + 1;
    const int32_t dst_first = cfg.dst_layer_range.first < 0 ? d.first_layer : cfg.dst_layer_range.first;
    if (d.last_layer >= layers || (by_addr && cfg.dst_addrs.size() != static_cast<size_t>(count) * per) ||
        (!by_addr && static_cast<uint64_t>(dst_first + count) * per > rc.entry.addrs.size())) {
      LLM_LOGE("%s: destination %zu: source layers [%d, %d] of %d, destination layers from %d, %zu addresses: out of "
               "range",
               kCall, c, d.first_layer, d.last_layer, layers, dst_first, cfg.dst_addrs.size());
      return LLM_PARAM_INVALID;
    }
    // The destination's geometry: the peer's table, or the options for raw addresses.
    TensorGeometry dst_geo = rc.geo;
    if (by_addr) {
      dst_geo.unit_bytes = options.dst_block_memory_size != 0 ? options.dst_block_memory_size : local.geo.unit_bytes;
      dst_geo.units = dst_blocks ? UINT64_MAX / std::max<uint64_t>(dst_geo.unit_bytes, 1) : 1;
    }
    const uint64_t src_unit = local.geo.unit_bytes;
    bool ok = true;
    if (options.dst_block_memory_size != 0 && dst_geo.unit_bytes != options.dst_block_memory_size) ok = false;
    if (src_blocks) {
      ok = ok && dst_geo.unit_bytes == src_unit;
      for (size_t i = 0; ok && i < options.src_blocks.size(); ++i) {
        ok = options.src_blocks[i] < local.geo.units && options.dst_blocks[i] < dst_geo.units;
        d.units.push_back({options.src_blocks[i] * src_unit, options.dst_blocks[i] * src_unit, src_unit});
      }
    } else {
      const uint64_t item_off = uint64_t{cfg.src_batch_index} * src_unit;
      ok = ok && cfg.src_batch_index < local.geo.units;
      if (dst_blocks) {
        for (size_t i = 0; ok && i < options.dst_blocks.size() && i * dst_geo.unit_bytes < src_unit; ++i) {
          ok = options.dst_blocks[i] < dst_geo.units;
          const uint64_t len = std::min(dst_geo.unit_bytes, src_unit - i * dst_geo.unit_bytes);
          d.units.push_back({item_off + i * dst_geo.unit_bytes, options.dst_blocks[i] * dst_geo.unit_bytes, len});
        }
      } else {
        const uint64_t dst_off = by_addr ? 0 : uint64_t{rc.batch_index} * dst_geo.unit_bytes;
        ok = ok && (by_addr || (rc.batch_index < dst_geo.units && dst_geo.unit_bytes == src_unit));
        d.units.push_back({item_off, dst_off, src_unit});
      }
    }
    if (!ok) {
      LLM_LOGE("%s: destination %zu: blocks or batches out of range, or blocks of %" PRIu64 " bytes here and %" PRIu64
               " there",
               kCall, c, src_unit, dst_geo.unit_bytes);
      return LLM_PARAM_INVALID;
    }
    for (int32_t i = 0; i < count; ++i) {
      std::vector<TensorPair> tensors;
      for (uint32_t j = 0; j < per; ++j) {
        const uint32_t st = static_cast<uint32_t>(d.first_layer + i) * per + j;
        const uint64_t remote = by_addr ? cfg.dst_addrs[static_cast<size_t>(i) * per + j]
                                        : rc.entry.addrs[static_cast<size_t>(dst_first + i) * per + j];
        tensors.push_back({local.addrs[st], remote});
      }
      d.plans.emplace_back();
      BuildPlan(tensors, d.units, &d.plans.back());
    }
  }
  auto impl = std::make_shared<CacheTask::Impl>(dests.size());
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    tasks_.erase(std::remove_if(tasks_.begin(), tasks_.end(), [](const auto &t) { return t->finished(); }),
                 tasks_.end());
    tasks_.push_back(impl);
  }
  const bool whole_deadline = options.timeout_in_millis >= 0;
  const Clock::time_point task_deadline = start + std::chrono::milliseconds(std::max(options.timeout_in_millis, 0));
  impl->Start([this, dests = std::move(dests), synchronizer, options, whole_deadline, task_deadline](
                  CacheTask::Impl *task) mutable {
    int32_t lo = INT32_MAX, hi = -1;
    for (const auto &d : dests) {
      lo = std::min(lo, d.first_layer);
      hi = std::max(hi, d.last_layer);
    }
    for (int32_t layer = lo; layer <= hi; ++layer) {
      bool wanted = false;
      for (const auto &d : dests) wanted = wanted || (!d.done && layer >= d.first_layer && layer <= d.last_layer);
      if (!wanted) continue;
      const bool synced = !task->stopping() &&
                          synchronizer->SynchronizeLayer(static_cast<uint32_t>(layer), options.timeout_in_millis);
      for (size_t c = 0; c < dests.size(); ++c) {
        Destination &d = dests[c];
        if (d.done || layer < d.first_layer || layer > d.last_layer) continue;
        Status s = LLM_FAILED;
        std::vector<bool> failed(d.units.size(), false);
        if (synced) {
          d.result.started = true;
          TransferPlan &plan = d.plans[static_cast<size_t>(layer - d.first_layer)];
          d.result.report.bytes += plan.bytes;
          d.result.report.descriptors += plan.descs.size();
          s = Move("TransferCacheAsync", d.link.remote, true, &plan,
                   whole_deadline ? task_deadline : DeadlineFromNow(), &failed);
        } else {
          LLM_LOGE("TransferCacheAsync: layer %d %s; layers %d to %d of destination %zu are not pushed", layer,
                   task->stopping() ? "not pushed: finalizing" : "did not synchronize", layer, d.last_layer, c);
        }
        if (s != LLM_SUCCESS) {
          d.done = true;
          d.result.status = s;
          d.result.report.failed_layers = LayersFrom(layer, d.last_layer);
          for (size_t i = 0; i < d.units.size(); ++i) {
            d.result.report.failed_src_blocks.push_back(options.src_blocks.empty() ? d.config.src_batch_index
                                                                                   : options.src_blocks[i]);
            d.result.report.failed_dst_blocks.push_back(options.dst_blocks.empty() ? d.config.dst.batch_index
                                                                                   : options.dst_blocks[i]);
          }
        } else if (layer == d.last_layer) {
          d.done = true;
        }
        task->Update(c, d.result);
      }
    }
    if (!options.ready_tag.empty()) {
      for (const auto &d : dests) {
        NotifyReady(d.config.dst.cluster_id, options.ready_tag, d.result.status, d.result.report.failed_layers,
                    sync_timeout_ms());
      }
    }
    task->Finish();
  });
  task = std::make_shared<CacheTask>(impl);
  return LLM_SUCCESS;
}

}  // namespace llm_datadist
