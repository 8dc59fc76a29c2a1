// datadist_impl.cc: LlmDataDist's life cycle, roles, links and ready notices.
#include "datadist_impl.h"

#include <sys/mman.h>

#include <cinttypes>
#include <future>
#include <sstream>

#include "layer_push.h"
#include "llm_log.h"
#include "ready_notice.h"

namespace llm_datadist {
namespace {

// LLM-DataDist's limit of clusters per LinkLlmClusters / UnlinkLlmClusters call.
constexpr size_t kMaxClustersPerCall = 16;

bool ValidRole(LlmRole role) { return role == LlmRole::kPrompt || role == LlmRole::kDecoder || role == LlmRole::kMix; }

uint8_t *MapAnonymous(size_t len) {
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
}

}  // namespace

Status FromHixl(hixl::Status s) {
  switch (s) {
    case hixl::SUCCESS:
      return LLM_SUCCESS;
    case hixl::PARAM_INVALID:
      return LLM_PARAM_INVALID;
    case hixl::TIMEOUT:
      return LLM_TIMEOUT;
    case hixl::NOT_CONNECTED:
      return LLM_NOT_YET_LINK;
    case hixl::ALREADY_CONNECTED:
      return LLM_ALREADY_LINK;
    case hixl::UNSUPPORTED:
      return LLM_FEATURE_NOT_ENABLED;
    case hixl::RESOURCE_EXHAUSTED:
      return LLM_OUT_OF_MEMORY;
    default:
      return LLM_FAILED;
  }
}

Status LlmDataDist::LlmDataDistImpl::Initialize(const std::map<AscendString, AscendString> &options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (initialized_) {
    LLM_LOGI("Initialize: cluster %" PRIu64 " is initialized already", cluster_id_);
    return LLM_SUCCESS;
  }
  if (!ValidRole(role_)) {
    LLM_LOGE("Initialize: role %d is not kPrompt, kDecoder or kMix", static_cast<int>(role_));
    return LLM_PARAM_INVALID;
  }
  DataDistOptions opts;
  Status s = ParseOptions(options, &opts);
  if (s != LLM_SUCCESS) return s;
  auto engine = std::make_unique<hixl::Hixl>();
  // A client still names a local address: any, the engine only connects out.
  const std::string local = opts.listen.empty() ? "0.0.0.0" : opts.listen;
  hixl::Status hs = engine->Initialize(local.c_str(), opts.hixl);
  if (hs != hixl::SUCCESS) {
    LLM_LOGE("Initialize: the hixl engine at %s did not start (hixl status %u; its log says why)", local.c_str(), hs);
    return hs == hixl::PARAM_INVALID ? LLM_PARAM_INVALID : FromHixl(hs);
  }
  uint8_t *table = MapAnonymous(kTableMapBytes);
  uint8_t *read_buf = MapAnonymous(kTableMapBytes);
  hixl::MemDesc td{};
  td.addr = reinterpret_cast<uintptr_t>(table);
  td.len = kTableRegionLen;
  hixl::MemDesc rd{};
  rd.addr = reinterpret_cast<uintptr_t>(read_buf);
  rd.len = kTableMapBytes;
  if (table == nullptr || read_buf == nullptr ||
      engine->RegisterMem(td, hixl::MEM_HOST, table_handle_) != hixl::SUCCESS ||
      engine->RegisterMem(rd, hixl::MEM_HOST, read_handle_) != hixl::SUCCESS) {
    LLM_LOGE("Initialize: cannot map and register the cache table (%" PRIu64 " bytes)", kTableMapBytes);
    engine->Finalize();
    if (table != nullptr) munmap(table, kTableMapBytes);
    if (read_buf != nullptr) munmap(read_buf, kTableMapBytes);
    return LLM_OUT_OF_MEMORY;
  }
  {
    std::unique_lock<std::shared_mutex> writer(engine_mu_);
    engine_ = std::move(engine);
  }
  opts_ = std::move(opts);
  table_ = table;
  read_buf_ = read_buf;
  table_generation_ = 0;
  next_cache_id_ = 1;
  next_comm_id_ = 1;
  s = PublishLocked();
  if (s != LLM_SUCCESS) return s;
  initialized_ = true;
  LLM_LOGI("Initialize: cluster %" PRIu64 " up as %s (device %d, transfers time out after %d ms)", cluster_id_,
           opts_.listen.empty() ? "a client" : opts_.listen.c_str(), opts_.device_id, opts_.sync_timeout_ms);
  return LLM_SUCCESS;
}

void LlmDataDist::LlmDataDistImpl::StopTasks() {
  std::vector<std::shared_ptr<CacheTask::Impl>> tasks;
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    tasks.swap(tasks_);
  }
  for (auto &t : tasks) t->Stop();
  for (auto &t : tasks) t->Join();
}

void LlmDataDist::LlmDataDistImpl::Finalize() {
  // Layer-wise tasks use the engine: they end first (after the layer they move).
  StopTasks();
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) return;
  initialized_ = false;
  // Closes every link and fails the calls in it (hixl's Finalize may run
  // beside them); no engine thread touches our memory after it. The engine
  // goes once the calls in it have returned.
  engine_->Finalize();
  {
    std::unique_lock<std::shared_mutex> writer(engine_mu_);
    engine_.reset();
    ++engine_gen_;
  }
  links_.clear();
  link_busy_.clear();
  comms_.clear();
  ranges_.clear();
  for (auto &kv : caches_) {
    UnmapHostCache(&kv.second.alloc);
  }
  caches_.clear();
  munmap(table_, kTableMapBytes);
  munmap(read_buf_, kTableMapBytes);
  table_ = read_buf_ = nullptr;
  table_handle_ = read_handle_ = nullptr;
}

Status LlmDataDist::LlmDataDistImpl::CheckClusters(const char *call, size_t clusters, int32_t timeout_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      LLM_LOGE("%s: not initialized", call);
      return LLM_FAILED;
    }
  }
  if (timeout_ms <= 0 || clusters == 0) {
    LLM_LOGE("%s: timeout %d ms and %zu clusters (need a timeout > 0 and a cluster)", call, timeout_ms, clusters);
    return LLM_PARAM_INVALID;
  }
  if (clusters > kMaxClustersPerCall) {
    LLM_LOGE("%s: %zu clusters in one call; at most %zu (call again for more)", call, clusters, kMaxClustersPerCall);
    return LLM_CLUSTER_NUM_EXCEED_LIMIT;
  }
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::LinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                                  int32_t timeout_ms) {
  Status s = CheckClusters("LinkLlmClusters", clusters.size(), timeout_ms);
  if (s != LLM_SUCCESS) return s;
  std::vector<std::future<Status>> futures;
  for (const ClusterInfo &c : clusters) {
    futures.push_back(std::async(std::launch::async, [this, &c, timeout_ms] { return LinkOne(c, timeout_ms); }));
  }
  rets.clear();
  Status overall = LLM_SUCCESS;
  for (auto &f : futures) {
    rets.push_back(f.get());
    if (rets.back() != LLM_SUCCESS) overall = rets.back();
  }
  return overall;
}

Status LlmDataDist::LlmDataDistImpl::LinkOne(const ClusterInfo &cluster, int32_t timeout_ms) {
  const uint64_t id = cluster.remote_cluster_id;
  if (cluster.remote_ip_infos.size() != 1 || cluster.remote_ip_infos[0].ip.GetLength() == 0 ||
      cluster.remote_ip_infos[0].port == 0) {
    LLM_LOGE("LinkLlmClusters: cluster %" PRIu64 " needs exactly one remote ip_info with an ip and a port (it has %zu)",
             id, cluster.remote_ip_infos.size());
    return LLM_PARAM_INVALID;
  }
  if (id == cluster_id_) {
    LLM_LOGE("LinkLlmClusters: cluster %" PRIu64 " is this one", id);
    return LLM_PARAM_INVALID;
  }
  const std::string remote = EngineName(cluster.remote_ip_infos[0].ip.GetString(), cluster.remote_ip_infos[0].port);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (links_.count(id) != 0) {
      LLM_LOGE("LinkLlmClusters: cluster %" PRIu64 " is linked already (at %s)", id, links_[id].remote.c_str());
      return LLM_ALREADY_LINK;
    }
    if (!link_busy_.insert(id).second) {
      LLM_LOGE("LinkLlmClusters: cluster %" PRIu64 " is being linked or unlinked by another call", id);
      return LLM_PROCESSING_LINK;
    }
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  Status result = LLM_SUCCESS;
  uint64_t table_addr = 0;
  hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.Connect(remote.c_str(), timeout_ms); });
  if (hs == hixl::ALREADY_CONNECTED) {
    LLM_LOGE("LinkLlmClusters: %s (cluster %" PRIu64 ") is linked already under another cluster id", remote.c_str(),
             id);
    result = LLM_ALREADY_LINK;
  } else if (hs != hixl::SUCCESS) {
    LLM_LOGE("LinkLlmClusters: cannot reach cluster %" PRIu64 " at %s (hixl status %u)", id, remote.c_str(), hs);
    result = LLM_LINK_FAILED;
  } else if (FindPeerTable(remote, id, deadline, &table_addr) != LLM_SUCCESS) {
    OnEngine([&](hixl::Hixl &e) { return e.Disconnect(remote.c_str(), timeout_ms); });
    result = LLM_LINK_FAILED;
  }
  std::lock_guard<std::mutex> lock(mu_);
  link_busy_.erase(id);
  if (result == LLM_SUCCESS) {
    links_[id] = PeerLink{remote, table_addr};
    LLM_LOGI("LinkLlmClusters: cluster %" PRIu64 " linked at %s", id, remote.c_str());
  }
  return result;
}

Status LlmDataDist::LlmDataDistImpl::FindPeerTable(const std::string &remote, uint64_t expected_cluster,
                                                   Clock::time_point deadline, uint64_t *table_addr) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  std::vector<hixl::MemDesc> mems;
  hixl::Status hs = OnEngine([&](hixl::Hixl &e) {
    return e.GetRemoteMems(remote.c_str(), mems, static_cast<int32_t>(std::max<int64_t>(left, 1)));
  });
  if (hs != hixl::SUCCESS) {
    LLM_LOGE("LinkLlmClusters: %s did not list its memory (hixl status %u)", remote.c_str(), hs);
    return FromHixl(hs);
  }
  for (const hixl::MemDesc &m : mems) {
    if (m.len != kTableRegionLen) continue;
    CacheTable table;
    if (ReadPeerTable(remote, m.addr, deadline, &table) != LLM_SUCCESS) continue;
    if (table.cluster_id == expected_cluster) {
      *table_addr = m.addr;
      return LLM_SUCCESS;
    }
    LLM_LOGE("LinkLlmClusters: %s is cluster %" PRIu64 ", not %" PRIu64, remote.c_str(), table.cluster_id,
             expected_cluster);
    return LLM_LINK_FAILED;
  }
  LLM_LOGE("LinkLlmClusters: %s publishes no cache table: not an LlmDataDist (of this version)", remote.c_str());
  return LLM_LINK_FAILED;
}

Status LlmDataDist::LlmDataDistImpl::UnlinkClusters(const std::vector<ClusterInfo> &clusters,
                                                    std::vector<Status> &rets, int32_t timeout_ms) {
  Status s = CheckClusters("UnlinkLlmClusters", clusters.size(), timeout_ms);
  if (s != LLM_SUCCESS) return s;
  rets.clear();
  Status overall = LLM_SUCCESS;
  for (const ClusterInfo &c : clusters) {
    rets.push_back(UnlinkOne(c, timeout_ms));
    if (rets.back() != LLM_SUCCESS) overall = rets.back();
  }
  return overall;
}

Status LlmDataDist::LlmDataDistImpl::UnlinkOne(const ClusterInfo &cluster, int32_t timeout_ms) {
  const uint64_t id = cluster.remote_cluster_id;
  PeerLink link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(id);
    if (it == links_.end()) {
      // As LLM-DataDist: nothing to undo (e.g. the serving side of a link).
      LLM_LOGW("UnlinkLlmClusters: cluster %" PRIu64 " is not linked from this side", id);
      return link_busy_.count(id) != 0 ? LLM_PROCESSING_LINK : LLM_SUCCESS;
    }
    // Calls from now on see no link; those in flight fail as the link closes.
    link = it->second;
    links_.erase(it);
    link_busy_.insert(id);
  }
  hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.Disconnect(link.remote.c_str(), timeout_ms); });
  std::lock_guard<std::mutex> lock(mu_);
  link_busy_.erase(id);
  if (hs != hixl::SUCCESS && hs != hixl::NOT_CONNECTED) {
    LLM_LOGE("UnlinkLlmClusters: cluster %" PRIu64 " at %s: hixl status %u; the link is dropped here", id,
             link.remote.c_str(), hs);
    return LLM_UNLINK_FAILED;
  }
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::NotifyReady(uint64_t dst_cluster_id, const std::string &tag, Status status,
                                                 const std::vector<int32_t> &failed_layers, int32_t timeout_ms) {
  PeerLink link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      LLM_LOGE("NotifyKvReady: not initialized");
      return LLM_FAILED;
    }
    auto it = links_.find(dst_cluster_id);
    if (it == links_.end()) {
      LLM_LOGE("NotifyKvReady: cluster %" PRIu64 " is not linked", dst_cluster_id);
      return LLM_NOT_YET_LINK;
    }
    link = it->second;
  }
  hixl::NotifyDesc notify;
  if (!EncodeReadyNotice(cluster_id_, tag, status, failed_layers, &notify)) {
    LLM_LOGE("NotifyKvReady: tag of %zu bytes (and %zu failed layers) do not fit a notify", tag.size(),
             failed_layers.size());
    return LLM_PARAM_INVALID;
  }
  if (timeout_ms <= 0) {
    LLM_LOGE("NotifyKvReady: timeout %d ms", timeout_ms);
    return LLM_PARAM_INVALID;
  }
  hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.SendNotify(link.remote.c_str(), notify, timeout_ms); });
  if (hs != hixl::SUCCESS) {
    LLM_LOGE("NotifyKvReady: cluster %" PRIu64 " at %s: hixl status %u", dst_cluster_id, link.remote.c_str(), hs);
  }
  return FromHixl(hs);
}

Status LlmDataDist::LlmDataDistImpl::GetReady(std::vector<KvReadyInfo> &ready) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      LLM_LOGE("GetReadyKv: not initialized");
      return LLM_FAILED;
    }
  }
  std::vector<hixl::NotifyDesc> notifies;
  hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.GetNotifies(notifies); });
  if (hs != hixl::SUCCESS) return FromHixl(hs);
  ready.clear();
  for (const hixl::NotifyDesc &n : notifies) {
    KvReadyInfo info;
    if (DecodeReadyNotice(n, &info)) {
      ready.push_back(std::move(info));
    } else {
      LLM_LOGW("GetReadyKv: a notify that is no ready notice (name of %zu bytes) is dropped", n.name.GetLength());
    }
  }
  return LLM_SUCCESS;
}

}  // namespace llm_datadist
