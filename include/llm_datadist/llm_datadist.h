/*
 * llm_datadist.h: class llm_datadist::LlmDataDist, the KV-cache layer of
 * prefill/decode-disaggregated serving, on hixl.
 *
 * Source-compatible with LLM-DataDist (Huawei's KV-cache layer above HIXL):
 * same names, values, layouts and default arguments. The contract of every
 * call is in docs/kv.md. Items marked [hixl extension] are this project's
 * own; code written for LLM-DataDist does not need them.
 *
 * C++14, standard library only (and hixl/hixl_types.h for ge::AscendString).
 */
#ifndef HIXL_LLM_DATADIST_LLM_DATADIST_H_
#define HIXL_LLM_DATADIST_LLM_DATADIST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hixl/hixl_types.h"
#include "llm_datadist/data_type.h"
#include "llm_datadist/llm_error_codes.h"

namespace llm_datadist {
namespace {
constexpr uint8_t kDefaultTensorNumPerLayer = 2U;
}
using Status = ge::Status;
using AscendString = ge::AscendString;
using DataType = ge::DataType;

// options of Initialize and SetRole
constexpr const char OPTION_LISTEN_IP_INFO[] = "llm.ListenIpInfo";
constexpr const char OPTION_DEVICE_ID[] = "llm.DeviceId";
constexpr const char OPTION_SYNC_CACHE_WAIT_TIME[] = "llm.SyncKvCacheWaitTime";
constexpr const char OPTION_BUF_POOL_CFG[] = "llm.BufPoolCfg";
constexpr const char OPTION_ENABLE_SET_ROLE[] = "llm.EnableSwitchRole";
constexpr const char OPTION_LOCAL_COMM_RES[] = "llm.LocalCommRes";
constexpr const char OPTION_TRANSFER_BACKEND[] = "llm.TransferBackend";
constexpr const char OPTION_GLOBAL_RESOURCE_CONFIG[] = "llm.GlobalResourceConfig";

// status codes
constexpr Status LLM_SUCCESS = 0x0U;
constexpr Status LLM_FAILED = 0xFFFFFFFFU;
constexpr Status LLM_WAIT_PROC_TIMEOUT = 0x5010B001U;
constexpr Status LLM_KV_CACHE_NOT_EXIST = 0x5010B002U;
constexpr Status LLM_PARAM_INVALID = 0x5010B005U;
constexpr Status LLM_NOT_YET_LINK = 0x5010B007U;
constexpr Status LLM_ALREADY_LINK = 0x5010B008U;
constexpr Status LLM_LINK_FAILED = 0x5010B009U;
constexpr Status LLM_UNLINK_FAILED = 0x5010B00AU;
constexpr Status LLM_NOTIFY_PROMPT_UNLINK_FAILED = 0x5010B00BU;
constexpr Status LLM_CLUSTER_NUM_EXCEED_LIMIT = 0x5010B00CU;
constexpr Status LLM_PROCESSING_LINK = 0x5010B00DU;
constexpr Status LLM_DEVICE_OUT_OF_MEMORY = 0x5010B00EU;
constexpr Status LLM_EXIST_LINK = 0x5010B018U;
constexpr Status LLM_FEATURE_NOT_ENABLED = 0x5010B019U;
constexpr Status LLM_TIMEOUT = 0x5010B01AU;
constexpr Status LLM_LINK_BUSY = 0x5010B01BU;
constexpr Status LLM_OUT_OF_MEMORY = 0x5010B01CU;

// data types
using ge::DT_BF16;
using ge::DT_BOOL;
using ge::DT_COMPLEX128;
using ge::DT_COMPLEX32;
using ge::DT_COMPLEX64;
using ge::DT_DOUBLE;
using ge::DT_DUAL;
using ge::DT_DUAL_SUB_INT8;
using ge::DT_DUAL_SUB_UINT8;
using ge::DT_FLOAT;
using ge::DT_FLOAT16;
using ge::DT_FLOAT4_E1M2;
using ge::DT_FLOAT4_E2M1;
using ge::DT_FLOAT6_E2M3;
using ge::DT_FLOAT6_E3M2;
using ge::DT_FLOAT8_E4M3FN;
using ge::DT_FLOAT8_E5M2;
using ge::DT_FLOAT8_E8M0;
using ge::DT_HIFLOAT8;
using ge::DT_INT16;
using ge::DT_INT2;
using ge::DT_INT32;
using ge::DT_INT4;
using ge::DT_INT64;
using ge::DT_INT8;
using ge::DT_QINT16;
using ge::DT_QINT32;
using ge::DT_QINT8;
using ge::DT_QUINT16;
using ge::DT_QUINT8;
using ge::DT_RESOURCE;
using ge::DT_STRING;
using ge::DT_STRING_REF;
using ge::DT_UINT1;
using ge::DT_UINT16;
using ge::DT_UINT2;
using ge::DT_UINT32;
using ge::DT_UINT64;
using ge::DT_UINT8;
using ge::DT_UNDEFINED;
using ge::DT_VARIANT;

struct IpInfo {
  AscendString ip;
  uint16_t port = 0U;
  uint8_t reserved[128];
};

struct ClusterInfo {
  uint64_t remote_cluster_id = 0U;
  int32_t remote_role_type = 0;
  std::vector<IpInfo> local_ip_infos;
  std::vector<IpInfo> remote_ip_infos;
  uint8_t reserved[128];
};

enum class LlmRole : int32_t { kPrompt = 1, kDecoder = 2, kMix = 3, kEnd };

struct CacheIndex {
  uint64_t cluster_id;
  int64_t cache_id;
  uint32_t batch_index;
  uint8_t reserved[128];
};

enum class CachePlacement : uint32_t {
  kHost = 0U,
  kDevice = 1U,
};

struct CacheDesc {
  CachePlacement placement = CachePlacement::kDevice;
  uint32_t num_tensors = 0U;
  DataType data_type = DT_UNDEFINED;
  std::vector<int64_t> shape;
  uint8_t reserved[128];
};

struct Cache {
  int64_t cache_id = -1;
  std::vector<uintptr_t> tensor_addrs;
  CacheDesc cache_desc;
  uint8_t reserved[128];
};

struct KvCacheExtParam {
  std::pair<int32_t, int32_t> src_layer_range = {-1, -1};
  std::pair<int32_t, int32_t> dst_layer_range{-1, -1};
  uint8_t tensor_num_per_layer = kDefaultTensorNumPerLayer;
  uint8_t reserved[127];
};

struct RegisterCfg {
  uint8_t reserved[128] = {0};
};

// ---- [hixl extension] types: none of these is in LLM-DataDist's C++ API ----

// How a cache is named across processes. kCacheId is CacheIndex (cache_id,
// batch_index); kBlocksKey is Python's BlocksCacheKey (model_id: the blocks
// cache registered under that key); kRequestKey is Python's CacheKey
// (req_id or prefix_id, and model_id: the batch registered under that key).
// cluster_id names the remote for lookups and is ignored at registration.
enum class KvCacheKeyKind : uint32_t { kCacheId = 0U, kBlocksKey = 1U, kRequestKey = 2U };
struct KvCacheKey {
  KvCacheKeyKind kind = KvCacheKeyKind::kCacheId;
  uint64_t cluster_id = 0U;
  int64_t cache_id = -1;
  uint32_t batch_index = 0U;
  uint64_t model_id = 0U;
  uint64_t req_id = UINT64_MAX;
  uint64_t prefix_id = UINT64_MAX;
};

// What a transfer did. On failure the failed_* lists name every block pair
// that may not have landed (src_blocks[i] -> dst_blocks[i]); a pair not named
// landed whole. For whole-cache calls a failure names the batch index.
struct KvTransferReport {
  uint64_t bytes = 0U;        // bytes the call moves (all of them on success)
  uint64_t descriptors = 0U;  // hixl descriptors after merging adjacent blocks and tensors
  std::vector<uint64_t> failed_src_blocks;
  std::vector<uint64_t> failed_dst_blocks;
  std::vector<int32_t> failed_layers;  // layer-wise pushes: source layers not (wholly) landed
};

// Layer-wise push (Python's CacheManager.transfer_cache_async in C++): the
// task calls SynchronizeLayer(l) for each source layer in order, on its own
// thread, and pushes layer l once it returns true, while the caller computes
// the next layer. false ends the task (LLM_FAILED for the rest).
class ASCEND_FUNC_VISIBILITY LayerSynchronizer {
 public:
  virtual ~LayerSynchronizer();
  virtual bool SynchronizeLayer(uint32_t layer_index, int32_t timeout_in_millis) = 0;
};

// One destination of a layer-wise push (Python's TransferWithCacheKeyConfig,
// or TransferConfig when dst_addrs is given: the remote tensors' addresses,
// tensor_num_per_layer per layer of src_layer_range, in dst.cluster_id).
struct LayerTransferConfig {
  KvCacheKey dst;
  std::vector<uint64_t> dst_addrs;
  std::pair<int32_t, int32_t> src_layer_range{-1, -1};  // inclusive; {-1, -1}: every layer
  std::pair<int32_t, int32_t> dst_layer_range{-1, -1};  // {-1, -1}: as src_layer_range
  uint32_t src_batch_index = 0U;
};

struct LayerPushOptions {
  std::vector<uint64_t> src_blocks;  // empty: the source is batch src_batch_index of a cache
  std::vector<uint64_t> dst_blocks;  // empty: the destination is batch dst.batch_index of a cache
  uint64_t dst_block_memory_size = 0U;  // bytes of a destination block (0: as the source's)
  uint8_t tensor_num_per_layer = kDefaultTensorNumPerLayer;
  int32_t timeout_in_millis = -1;  // the whole task; -1: llm.SyncKvCacheWaitTime per layer
  // Non-empty: when every layer to a destination has landed (or the task
  // failed), that destination is told with a notify carrying this tag,
  // which arrives after the data (see GetReadyKv).
  std::string ready_tag;
};

struct LayerPushResult {
  bool started = false;  // false: no layer to this destination was pushed yet
  Status status = LLM_SUCCESS;
  KvTransferReport report;
};

// A running layer-wise push. Dropping it does not stop the task (as a Python
// thread); LlmDataDist::Finalize waits for every task, so a synchronizer
// must return (and the task stops after the layer it moves).
class ASCEND_FUNC_VISIBILITY CacheTask {
 public:
  ~CacheTask();
  CacheTask(const CacheTask &) = delete;
  CacheTask &operator=(const CacheTask &) = delete;
  // Waits (timeout < 0: without limit) for every layer; the first failure of
  // any destination, LLM_SUCCESS, or LLM_TIMEOUT when the wait ran out.
  Status Synchronize(int32_t timeout_in_millis = -1);
  // Waits like Synchronize; one result per LayerTransferConfig (a wait that
  // ran out reports LLM_TIMEOUT for each destination not finished).
  std::vector<LayerPushResult> GetResults(int32_t timeout_in_millis = -1);

  class Impl;
  explicit CacheTask(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
};

// Python's RegisterMemStatus: how the memory exchange of a Link is going.
enum class RegisterMemStatus : int32_t { kOk = 0, kPreparing = 1, kFailed = 2 };

// Data-ordered completion at the receiving side: a peer that pushed into
// this side's caches says it is done; seen only after its data.
struct KvReadyInfo {
  uint64_t src_cluster_id = 0U;
  std::string tag;
  Status status = LLM_SUCCESS;  // the pusher's verdict
  std::vector<int32_t> failed_layers;
};

class ASCEND_FUNC_VISIBILITY LlmDataDist {
 public:
  LlmDataDist(uint64_t cluster_id, LlmRole role);
  ~LlmDataDist();

  Status Initialize(const std::map<AscendString, AscendString> &options);
  void Finalize();
  Status SetRole(LlmRole role, const std::map<AscendString, AscendString> &options = {});

  Status LinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                         int32_t timeout_in_millis = 1000);
  Status UnlinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                           int32_t timeout_in_millis = 1000, bool force_flag = false);

  Status AllocateCache(const CacheDesc &cache_desc, Cache &cache);
  Status DeallocateCache(int64_t cache_id);

  Status PullKvCache(const CacheIndex &src_cache_index, const Cache &dst_cache, uint32_t batch_index = 0U,
                     int64_t size = -1, const KvCacheExtParam &ext_param = {});
  Status PullKvBlocks(const CacheIndex &src_cache_index, const Cache &dst_cache,
                      const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                      const KvCacheExtParam &ext_param = {});
  Status CopyKvCache(const Cache &src_cache, const Cache &dst_cache, uint32_t src_batch_index = 0U,
                     uint32_t dst_batch_index = 0U, uint64_t offset = 0U, int64_t size = -1);
  Status CopyKvBlocks(const Cache &src_cache, const Cache &dst_cache, const std::vector<uint64_t> &src_blocks,
                      const std::vector<std::vector<uint64_t>> &dst_blocks_list);
  Status PushKvCache(const Cache &src_cache, const CacheIndex &dst_cache_index, uint32_t src_batch_index = 0U,
                     int64_t size = -1, const KvCacheExtParam &ext_param = {});
  Status PushKvBlocks(const Cache &src_cache, const CacheIndex &dst_cache_index,
                      const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                      const KvCacheExtParam &ext_param = {});

  Status RegisterKvCache(const CacheDesc &cache_desc, const std::vector<uint64_t> &addrs, const RegisterCfg &cfg,
                         int64_t &cache_id);
  Status UnregisterKvCache(int64_t cache_id);

  // ---- [hixl extension] calls ----

  // RegisterKvCache, and the keys peers may find the cache by (kBlocksKey:
  // model_id; kRequestKey: req_id/prefix_id and model_id, for batch_index).
  Status RegisterKvCache(const CacheDesc &cache_desc, const std::vector<uint64_t> &addrs, const RegisterCfg &cfg,
                         const std::vector<KvCacheKey> &keys, int64_t &cache_id);
  // AllocateCache with keys, as above.
  Status AllocateCache(const CacheDesc &cache_desc, const std::vector<KvCacheKey> &keys, Cache &cache);

  // The calls above with the remote cache named by a KvCacheKey, and a
  // report (may be null). src_blocks empty in PullKvBlocks: the source is
  // batch src.batch_index of a cache, spread over dst_blocks in order.
  Status PullKvCache(const KvCacheKey &src, const Cache &dst_cache, uint32_t batch_index, int64_t size,
                     const KvCacheExtParam &ext_param, KvTransferReport *report);
  Status PullKvBlocks(const KvCacheKey &src, const Cache &dst_cache, const std::vector<uint64_t> &src_blocks,
                      const std::vector<uint64_t> &dst_blocks, const KvCacheExtParam &ext_param,
                      KvTransferReport *report);
  Status PushKvCache(const Cache &src_cache, const KvCacheKey &dst, uint32_t src_batch_index, int64_t size,
                     const KvCacheExtParam &ext_param, KvTransferReport *report);
  Status PushKvBlocks(const Cache &src_cache, const KvCacheKey &dst, const std::vector<uint64_t> &src_blocks,
                      const std::vector<uint64_t> &dst_blocks, const KvCacheExtParam &ext_param,
                      KvTransferReport *report);

  // Layer-wise push (see LayerSynchronizer). The task keeps `synchronizer`.
  Status TransferCacheAsync(const Cache &src_cache, std::shared_ptr<LayerSynchronizer> synchronizer,
                            const std::vector<LayerTransferConfig> &configs, const LayerPushOptions &options,
                            std::shared_ptr<CacheTask> &task);

  // Tells a linked cluster that what this side pushed to it is in place:
  // it sees the notice only after the data of every push that returned
  // before this call.
  Status NotifyKvReady(uint64_t dst_cluster_id, const AscendString &tag, Status status = LLM_SUCCESS,
                       int32_t timeout_in_millis = 1000);
  // Hands over (and forgets) the notices received so far, from every peer.
  Status GetReadyKv(std::vector<KvReadyInfo> &ready);

  // LLM-DataDist's two-sided link (Python's LLMDataDist.link): a domain of
  // 2 to 4 clusters, cluster_rank_info mapping each cluster id to its rank
  // in rank_table (HCCL's JSON: server_list[].device[] with rank_id,
  // device_ip and an optional device_port, default 16666). Every member
  // calls it; each listens at its rank's address and links to every other
  // member, so that any member pulls from and pushes to any other. It waits
  // up to timeout_in_millis (-1: llm.LinkTotalTime, HCCL_CONNECT_TIMEOUT,
  // or 120 s) for the others; a member not reached by then fails it
  // (LLM_LINK_FAILED) and leaves nothing linked. comm_id names the domain.
  Status Link(const AscendString &comm_name, const std::map<uint64_t, uint32_t> &cluster_rank_info,
              const AscendString &rank_table, uint64_t &comm_id, int32_t timeout_in_millis = -1);
  // Unlinks this side from the domain's members (LLM_NOT_YET_LINK: no such domain).
  Status Unlink(uint64_t comm_id);
  // kOk once Link returned (the memory is exchanged by then).
  Status QueryRegisterMemStatus(uint64_t comm_id, RegisterMemStatus &status);
  // Python's CacheManager.remove_cache_key: peers no longer find a cache by
  // this request key (kRequestKey; its cluster_id is ignored). LLM_SUCCESS
  // also when no cache has it.
  Status RemoveKvCacheKey(const KvCacheKey &key);

 private:
  class LlmDataDistImpl;
  std::unique_ptr<LlmDataDistImpl> impl_;
};
}  // namespace llm_datadist

#endif  // HIXL_LLM_DATADIST_LLM_DATADIST_H_
