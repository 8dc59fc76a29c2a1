// llm_datadist.cc: class LlmDataDist, forwarding to its implementation.
#include "llm_datadist/llm_datadist.h"

#include "datadist_impl.h"
#include "llm_log.h"

namespace llm_datadist {
namespace {

KvCacheKey ById(const CacheIndex &index) {
  KvCacheKey k;
  k.kind = KvCacheKeyKind::kCacheId;
  k.cluster_id = index.cluster_id;
  k.cache_id = index.cache_id;
  k.batch_index = index.batch_index;
  return k;
}

// A transfer between the local cache `local_cache_id` and `remote`.
KvOp Op(const char *call, bool push, const KvCacheKey &remote, int64_t local_cache_id, const KvCacheExtParam &ext) {
  KvOp op;
  op.call = call;
  op.push = push;
  op.remote = remote;
  op.local_cache_id = local_cache_id;
  op.ext = ext;
  return op;
}

// A block transfer; dst_blocks may not be empty (src_blocks may: a batch
// item spread over dst_blocks).
Status BlockOp(const char *call, bool push, const KvCacheKey &remote, int64_t local_cache_id,
               const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
               const KvCacheExtParam &ext, KvOp *op) {
  if (dst_blocks.empty()) {
    LLM_LOGE("%s: dst_blocks is empty", call);
    return LLM_PARAM_INVALID;
  }
  *op = Op(call, push, remote, local_cache_id, ext);
  op->local_blocks = push ? src_blocks : dst_blocks;
  op->remote_blocks = push ? dst_blocks : src_blocks;
  return LLM_SUCCESS;
}

// LLM-DataDist's block calls move between block caches at batch 0 only.
bool BlocksFromBatchZero(const char *call, const std::vector<uint64_t> &src_blocks, uint32_t batch_index) {
  if (src_blocks.empty() || batch_index != 0) {
    LLM_LOGE("%s: src_blocks is empty or batch_index is %u (block transfers need blocks, at batch 0)", call,
             batch_index);
    return false;
  }
  return true;
}

}  // namespace

LlmDataDist::LlmDataDist(uint64_t cluster_id, LlmRole role) : impl_(new LlmDataDistImpl(cluster_id, role)) {}
LlmDataDist::~LlmDataDist() = default;

Status LlmDataDist::Initialize(const std::map<AscendString, AscendString> &options) {
  return impl_->Initialize(options);
}
void LlmDataDist::Finalize() { impl_->Finalize(); }
Status LlmDataDist::SetRole(LlmRole role, const std::map<AscendString, AscendString> &options) {
  return impl_->SetRole(role, options);
}

Status LlmDataDist::LinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                    int32_t timeout_in_millis) {
  return impl_->LinkClusters(clusters, rets, timeout_in_millis);
}
Status LlmDataDist::UnlinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                      int32_t timeout_in_millis, bool force_flag) {
  (void)force_flag;  // a hixl link is this side's alone: unlinking it is always local
  return impl_->UnlinkClusters(clusters, rets, timeout_in_millis);
}

Status LlmDataDist::AllocateCache(const CacheDesc &cache_desc, Cache &cache) {
  return impl_->AllocateCache(cache_desc, {}, cache);
}
Status LlmDataDist::AllocateCache(const CacheDesc &cache_desc, const std::vector<KvCacheKey> &keys, Cache &cache) {
  return impl_->AllocateCache(cache_desc, keys, cache);
}
Status LlmDataDist::DeallocateCache(int64_t cache_id) { return impl_->DeallocateCache(cache_id); }

Status LlmDataDist::RegisterKvCache(const CacheDesc &cache_desc, const std::vector<uint64_t> &addrs,
                                    const RegisterCfg &cfg, int64_t &cache_id) {
  (void)cfg;
  return impl_->RegisterCache(cache_desc, addrs, {}, cache_id);
}
Status LlmDataDist::RegisterKvCache(const CacheDesc &cache_desc, const std::vector<uint64_t> &addrs,
                                    const RegisterCfg &cfg, const std::vector<KvCacheKey> &keys, int64_t &cache_id) {
  (void)cfg;
  return impl_->RegisterCache(cache_desc, addrs, keys, cache_id);
}
Status LlmDataDist::UnregisterKvCache(int64_t cache_id) { return impl_->UnregisterCache(cache_id); }

Status LlmDataDist::PullKvCache(const CacheIndex &src_cache_index, const Cache &dst_cache, uint32_t batch_index,
                                int64_t size, const KvCacheExtParam &ext_param) {
  return PullKvCache(ById(src_cache_index), dst_cache, batch_index, size, ext_param, nullptr);
}
Status LlmDataDist::PullKvCache(const KvCacheKey &src, const Cache &dst_cache, uint32_t batch_index, int64_t size,
                                const KvCacheExtParam &ext_param, KvTransferReport *report) {
  KvOp op;
  op.call = "PullKvCache";
  op.remote = src;
  op.local_cache_id = dst_cache.cache_id;
  op.local_batch = batch_index;
  op.size = size;
  op.ext = ext_param;
  return impl_->Transfer(op, report);
}

Status LlmDataDist::PullKvBlocks(const CacheIndex &src_cache_index, const Cache &dst_cache,
                                 const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                 const KvCacheExtParam &ext_param) {
  if (!BlocksFromBatchZero("PullKvBlocks", src_blocks, src_cache_index.batch_index)) return LLM_PARAM_INVALID;
  return PullKvBlocks(ById(src_cache_index), dst_cache, src_blocks, dst_blocks, ext_param, nullptr);
}
Status LlmDataDist::PullKvBlocks(const KvCacheKey &src, const Cache &dst_cache, const std::vector<uint64_t> &src_blocks,
                                 const std::vector<uint64_t> &dst_blocks, const KvCacheExtParam &ext_param,
                                 KvTransferReport *report) {
  KvOp op;
  Status s = BlockOp("PullKvBlocks", false, src, dst_cache.cache_id, src_blocks, dst_blocks, ext_param, &op);
  return s != LLM_SUCCESS ? s : impl_->Transfer(op, report);
}

Status LlmDataDist::PushKvCache(const Cache &src_cache, const CacheIndex &dst_cache_index, uint32_t src_batch_index,
                                int64_t size, const KvCacheExtParam &ext_param) {
  return PushKvCache(src_cache, ById(dst_cache_index), src_batch_index, size, ext_param, nullptr);
}
Status LlmDataDist::PushKvCache(const Cache &src_cache, const KvCacheKey &dst, uint32_t src_batch_index, int64_t size,
                                const KvCacheExtParam &ext_param, KvTransferReport *report) {
  if (size != -1) {
    LLM_LOGE("PushKvCache: size %ld; only -1 (the whole batch) is supported", static_cast<long>(size));
    return LLM_PARAM_INVALID;
  }
  KvOp op = Op("PushKvCache", true, dst, src_cache.cache_id, ext_param);
  op.local_batch = src_batch_index;
  return impl_->Transfer(op, report);
}

Status LlmDataDist::PushKvBlocks(const Cache &src_cache, const CacheIndex &dst_cache_index,
                                 const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                 const KvCacheExtParam &ext_param) {
  if (!BlocksFromBatchZero("PushKvBlocks", src_blocks, dst_cache_index.batch_index)) return LLM_PARAM_INVALID;
  return PushKvBlocks(src_cache, ById(dst_cache_index), src_blocks, dst_blocks, ext_param, nullptr);
}
Status LlmDataDist::PushKvBlocks(const Cache &src_cache, const KvCacheKey &dst, const std::vector<uint64_t> &src_blocks,
                                 const std::vector<uint64_t> &dst_blocks, const KvCacheExtParam &ext_param,
                                 KvTransferReport *report) {
  KvOp op;
  Status s = BlockOp("PushKvBlocks", true, dst, src_cache.cache_id, src_blocks, dst_blocks, ext_param, &op);
  return s != LLM_SUCCESS ? s : impl_->Transfer(op, report);
}

Status LlmDataDist::CopyKvCache(const Cache &src_cache, const Cache &dst_cache, uint32_t src_batch_index,
                                uint32_t dst_batch_index, uint64_t offset, int64_t size) {
  return impl_->CopyCache(src_cache, dst_cache, src_batch_index, dst_batch_index, offset, size);
}
Status LlmDataDist::CopyKvBlocks(const Cache &src_cache, const Cache &dst_cache,
                                 const std::vector<uint64_t> &src_blocks,
                                 const std::vector<std::vector<uint64_t>> &dst_blocks_list) {
  return impl_->CopyBlocks(src_cache, dst_cache, src_blocks, dst_blocks_list);
}

Status LlmDataDist::TransferCacheAsync(const Cache &src_cache, std::shared_ptr<LayerSynchronizer> synchronizer,
                                       const std::vector<LayerTransferConfig> &configs,
                                       const LayerPushOptions &options, std::shared_ptr<CacheTask> &task) {
  return impl_->TransferCacheAsync(src_cache, std::move(synchronizer), configs, options, task);
}

Status LlmDataDist::NotifyKvReady(uint64_t dst_cluster_id, const AscendString &tag, Status status,
                                  int32_t timeout_in_millis) {
  return impl_->NotifyReady(dst_cluster_id, std::string(tag.GetString(), tag.GetLength()), status, {},
                            timeout_in_millis);
}
Status LlmDataDist::GetReadyKv(std::vector<KvReadyInfo> &ready) { return impl_->GetReady(ready); }

Status LlmDataDist::Link(const AscendString &comm_name, const std::map<uint64_t, uint32_t> &cluster_rank_info,
                         const AscendString &rank_table, uint64_t &comm_id, int32_t timeout_in_millis) {
  return impl_->Link(std::string(comm_name.GetString(), comm_name.GetLength()), cluster_rank_info,
                     std::string(rank_table.GetString(), rank_table.GetLength()), timeout_in_millis, comm_id);
}
Status LlmDataDist::Unlink(uint64_t comm_id) { return impl_->Unlink(comm_id); }
Status LlmDataDist::QueryRegisterMemStatus(uint64_t comm_id, RegisterMemStatus &status) {
  return impl_->QueryRegisterMemStatus(comm_id, status);
}
Status LlmDataDist::RemoveKvCacheKey(const KvCacheKey &key) { return impl_->RemoveCacheKey(key); }

}  // namespace llm_datadist
