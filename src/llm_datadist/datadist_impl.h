// datadist_impl.h: the state behind class LlmDataDist.
//
// One hixl engine per LlmDataDist: a server when llm.ListenIpInfo is given.
// Its caches are registered with the engine and listed in the cache table
// (cache_table.h), itself registered memory that linked peers READ. A link
// is a hixl link to the peer's engine plus the address of the peer's table.
//
// The code is split by concern: datadist_impl.cc (life cycle, roles, links,
// notices), datadist_caches.cc (register, allocate, local copies, the
// table), datadist_transfer.cc (pull and push), layer_push.cc (layer-wise
// push tasks).
//
// Every call may come from any thread; Finalize must not race the others
// (as in LLM-DataDist). mu_ guards the members marked so. engine_ is
// replaced by SetRole and Link (a listener moved: a new engine, this side's
// memory registered again) and reset by Finalize: every call into it holds
// engine_mu_ shared (OnEngine), for that call only. Lock order: mu_, then
// engine_mu_; read_mu_ and tasks_mu_ are taken alone or before engine_mu_.
//
// The code is split by concern as said above, and datadist_listener.cc
// (SetRole, moving the listener) and datadist_comm.cc (Link with a rank
// table: LLM-DataDist's two-sided link).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "cache_table.h"
#include "dtype_size.h"
#include "host_cache_memory.h"
#include "hixl/hixl.h"
#include "llm_datadist/llm_datadist.h"
#include "options.h"
#include "transfer_plan.h"

namespace llm_datadist {

using Clock = std::chrono::steady_clock;

// A cache of this side.
struct LocalCache {
  CacheDesc desc;
  TensorGeometry geo;
  std::vector<uint64_t> addrs;
  std::vector<TableKey> keys;
  std::vector<std::pair<uint64_t, uint64_t>> regions;  // (addr, len) registered for it
  HostCacheMemory alloc;                               // AllocateCache's memory (base null: none)
};

// A linked peer.
struct PeerLink {
  std::string remote;       // its hixl engine name
  uint64_t table_addr = 0;  // its cache table
  uint64_t comm_id = 0;     // the Link (rank table) that made it; 0: LinkLlmClusters
};

// A domain of Link: the other members, linked from this side.
struct CommDomain {
  std::string name;
  std::vector<uint64_t> members;  // cluster ids
};

// A range of memory registered with the engine, shared by the caches in it.
struct RangeReg {
  hixl::MemHandle handle = nullptr;
  int users = 0;
  hixl::MemType type = hixl::MEM_HOST;
};

// A remote cache as its table lists it, checked.
struct RemoteCache {
  TableEntry entry;
  TensorGeometry geo;
  uint32_t batch_index = 0;  // the batch the key named
};

// One KV transfer between a local cache and a remote one.
struct KvOp {
  const char *call = "";
  bool push = false;  // WRITE local -> remote; else READ remote -> local
  KvCacheKey remote;
  int64_t local_cache_id = -1;
  // Block transfers: both lists (block pairs). Whole-cache transfers: both
  // empty, with the batch indices and size below. Cache to blocks: the
  // remote list (pull) or local list (push) empty.
  std::vector<uint64_t> local_blocks;
  std::vector<uint64_t> remote_blocks;
  uint32_t local_batch = 0;
  int64_t size = -1;
  KvCacheExtParam ext;
};

class __attribute__((visibility("hidden"))) LlmDataDist::LlmDataDistImpl {
 public:
  LlmDataDistImpl(uint64_t cluster_id, LlmRole role) : cluster_id_(cluster_id), role_(role) {}
  ~LlmDataDistImpl() { Finalize(); }

  // datadist_impl.cc
  Status Initialize(const std::map<AscendString, AscendString> &options);
  void Finalize();
  Status LinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets, int32_t timeout_ms);
  Status UnlinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets, int32_t timeout_ms);
  Status NotifyReady(uint64_t dst_cluster_id, const std::string &tag, Status status,
                     const std::vector<int32_t> &failed_layers, int32_t timeout_ms);
  Status GetReady(std::vector<KvReadyInfo> &ready);

  // datadist_listener.cc
  Status SetRole(LlmRole role, const std::map<AscendString, AscendString> &options);

  // datadist_comm.cc
  Status Link(const std::string &comm_name, const std::map<uint64_t, uint32_t> &cluster_rank_info,
              const std::string &rank_table, int32_t timeout_ms, uint64_t &comm_id);
  Status Unlink(uint64_t comm_id);
  Status QueryRegisterMemStatus(uint64_t comm_id, RegisterMemStatus &status);

  // datadist_caches.cc
  Status RegisterCache(const CacheDesc &desc, const std::vector<uint64_t> &addrs, const std::vector<KvCacheKey> &keys,
                       int64_t &cache_id);
  Status UnregisterCache(int64_t cache_id);
  Status AllocateCache(const CacheDesc &desc, const std::vector<KvCacheKey> &keys, Cache &cache);
  Status DeallocateCache(int64_t cache_id);
  Status CopyCache(const Cache &src, const Cache &dst, uint32_t src_batch, uint32_t dst_batch, uint64_t offset,
                   int64_t size);
  Status CopyBlocks(const Cache &src, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                    const std::vector<std::vector<uint64_t>> &dst_blocks_list);
  Status RemoveCacheKey(const KvCacheKey &key);

  // datadist_transfer.cc
  // Checks, plans and moves one KV transfer; *report says what happened
  // (every pair is named as failed when the call was refused).
  Status Transfer(const KvOp &op, KvTransferReport *report);
  // Looks up what every transfer needs: the local cache, the link and the
  // remote cache (reading the peer's table). LLM_FAILED before Initialize,
  // LLM_KV_CACHE_NOT_EXIST, LLM_NOT_YET_LINK, LLM_PARAM_INVALID, or the
  // table read's failure; logged.
  Status Resolve(const char *call, int64_t local_cache_id, const KvCacheKey &remote, Clock::time_point deadline,
                 LocalCache *local, PeerLink *link, RemoteCache *remote_cache);
  // Moves a plan with TransferSync, group by group (at least group_bytes
  // each) until the deadline; on failure marks the units that may not have
  // landed in *failed (one flag per unit).
  Status Move(const char *call, const std::string &remote, bool push, TransferPlan *plan,
              Clock::time_point deadline, std::vector<bool> *failed);
  Clock::time_point DeadlineFromNow(int32_t timeout_ms = -1) const;

  // layer_push.cc
  Status TransferCacheAsync(const Cache &src_cache, std::shared_ptr<LayerSynchronizer> synchronizer,
                            const std::vector<LayerTransferConfig> &configs, const LayerPushOptions &options,
                            std::shared_ptr<CacheTask> &task);

  uint64_t cluster_id() const { return cluster_id_; }
  int32_t sync_timeout_ms() const { return opts_.sync_timeout_ms; }

  // f(engine) with engine_mu_ held shared: the engine is neither replaced nor
  // destroyed meanwhile (Finalize may end it, which fails the call). FAILED
  // without an engine. Never called holding engine_mu_.
  template <typename F>
  hixl::Status OnEngine(F &&f) {
    std::shared_lock<std::shared_mutex> lock(engine_mu_);
    return engine_ ? f(*engine_) : hixl::FAILED;
  }

 private:
  // datadist_impl.cc
  // LLM_FAILED before Initialize; LLM_PARAM_INVALID, LLM_CLUSTER_NUM_EXCEED_LIMIT.
  Status CheckClusters(const char *call, size_t clusters, int32_t timeout_ms);
  Status LinkOne(const ClusterInfo &cluster, int32_t timeout_ms);
  Status UnlinkOne(const ClusterInfo &cluster, int32_t timeout_ms);
  // Finds the peer's table among its registered regions: the address.
  Status FindPeerTable(const std::string &remote, uint64_t expected_cluster, Clock::time_point deadline,
                       uint64_t *table_addr);
  void StopTasks();

  // datadist_caches.cc
  // Registers [addr, addr+len) with the engine, counted (regions may be shared).
  Status RegisterRange(uint64_t addr, uint64_t len, CachePlacement placement);
  // Undoes RegisterRange (deregistering a range no cache uses any more).
  void ReleaseRanges(const std::vector<std::pair<uint64_t, uint64_t>> &ranges);
  // Writes the table image for the caches now listed. Caller holds mu_.
  Status PublishLocked();
  // A copy of a local cache; LLM_FAILED before Initialize, LLM_KV_CACHE_NOT_EXIST.
  Status LookupLocal(const char *call, int64_t cache_id, LocalCache *out);
  Status LookupPair(const char *call, const Cache &src, const Cache &dst, LocalCache *s, LocalCache *d);
  // Registers the cache's memory and lists it. Caller holds mu_.
  Status AddCache(LocalCache cache, int64_t &cache_id);
  // Unlists the cache, then deregisters its memory (without mu_).
  Status DropCache(const char *call, int64_t cache_id, bool allocated);

  // datadist_listener.cc
  // Replaces the engine with one at `listen` ("ip:port"; empty: a client),
  // with this side's memory registered in it; the old one is finalized
  // after. On failure nothing changes. Caller holds mu_, and no link is up
  // or being made (a new engine has none).
  Status MoveListenerLocked(const char *call, const std::string &listen);
  bool AnyLinkLocked() const { return !links_.empty() || !link_busy_.empty() || !comms_.empty(); }

  // datadist_comm.cc
  // Links this side to `remote` (cluster `id`), trying again until
  // `deadline` while it is not reachable yet; link->remote is set once
  // connected (also when the call then fails). Caller marked the cluster busy.
  Status LinkMember(uint64_t id, const std::string &remote, Clock::time_point deadline, PeerLink *link);

  // datadist_transfer.cc
  // Transfer's work; *moved once bytes may have moved.
  Status RunTransfer(const KvOp &op, KvTransferReport *report, bool *moved);
  // Reads the peer's table at `table_addr` (again while caught mid-rewrite).
  Status ReadPeerTable(const std::string &remote, uint64_t table_addr, Clock::time_point deadline, CacheTable *table);

  const uint64_t cluster_id_;
  LlmRole role_;  // guarded by mu_
  DataDistOptions opts_;  // set by Initialize; listen changes under mu_ (SetRole, Link)

  std::shared_mutex engine_mu_;
  // Written holding mu_ and engine_mu_ (exclusive): either one suffices to read it.
  std::unique_ptr<hixl::Hixl> engine_;
  uint64_t engine_gen_ = 0;  // as engine_; counts engines replaced (handles of an older one are void)

  std::mutex mu_;
  bool initialized_ = false;                 // guarded by mu_
  std::map<uint64_t, PeerLink> links_;       // guarded by mu_; by cluster id
  std::set<uint64_t> link_busy_;             // guarded by mu_; clusters being linked or unlinked
  std::map<uint64_t, CommDomain> comms_;     // guarded by mu_; by comm id
  uint64_t next_comm_id_ = 1;                // guarded by mu_
  std::map<int64_t, LocalCache> caches_;     // guarded by mu_
  int64_t next_cache_id_ = 1;                // guarded by mu_
  // Registered ranges by (addr, len); their handles change with the engine.
  std::map<std::pair<uint64_t, uint64_t>, RangeReg> ranges_;  // guarded by mu_
  uint64_t table_generation_ = 0;            // guarded by mu_
  uint8_t *table_ = nullptr;                 // this side's table (kTableMapBytes), written under mu_
  hixl::MemHandle table_handle_ = nullptr;   // guarded by mu_
  // Where peers' tables are read into (registered: no staging copy).
  std::mutex read_mu_;
  uint8_t *read_buf_ = nullptr;              // guarded by read_mu_ (contents)
  hixl::MemHandle read_handle_ = nullptr;    // guarded by mu_
  std::mutex tasks_mu_;
  std::vector<std::shared_ptr<CacheTask::Impl>> tasks_;  // guarded by tasks_mu_
};

// hixl's status as LLM-DataDist's.
Status FromHixl(hixl::Status s);

}  // namespace llm_datadist
