// datadist_transfer.cc: pulls and pushes of caches and blocks between this
// side and a linked peer, and the reads of the peer's table they start with.
#include <algorithm>
#include <cinttypes>

#include "datadist_impl.h"
#include "layer_range.h"
#include "llm_log.h"

namespace llm_datadist {
namespace {

// A transfer is moved in TransferSyncs of at least this much, one after the
// other: a failure then names only the blocks of the groups not done, at
// the cost of a round trip per group.
constexpr uint64_t kGroupBytes = 64ULL << 20;
// Reads of a table caught mid-rewrite each time before giving up.
constexpr int kTableReads = 16;

int32_t MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(left, INT32_MAX));
}

std::string KeyText(const KvCacheKey &k) {
  char buf[160];
  if (k.kind == KvCacheKeyKind::kCacheId) {
    std::snprintf(buf, sizeof(buf), "cache %" PRId64 " batch %u of cluster %" PRIu64, k.cache_id, k.batch_index,
                  k.cluster_id);
  } else if (k.kind == KvCacheKeyKind::kBlocksKey) {
    std::snprintf(buf, sizeof(buf), "blocks key (model %" PRIu64 ") of cluster %" PRIu64, k.model_id, k.cluster_id);
  } else {
    std::snprintf(buf, sizeof(buf), "request key (req %" PRIu64 ", prefix %" PRIu64 ", model %" PRIu64
                  ") of cluster %" PRIu64, k.req_id, k.prefix_id, k.model_id, k.cluster_id);
  }
  return buf;
}

// Block pairs as plan units: offsets of block ids on each side.
bool BlockUnits(const char *call, const std::vector<uint64_t> &local_blocks, const std::vector<uint64_t> &remote_blocks,
                const TensorGeometry &local, const TensorGeometry &remote, std::vector<PlanUnit> *units) {
  if (local.unit_bytes != remote.unit_bytes) {
    LLM_LOGE("%s: blocks of %" PRIu64 " bytes here and %" PRIu64 " at the peer: the caches do not match", call,
             local.unit_bytes, remote.unit_bytes);
    return false;
  }
  for (size_t i = 0; i < local_blocks.size(); ++i) {
    if (local_blocks[i] >= local.units || remote_blocks[i] >= remote.units) {
      LLM_LOGE("%s: block pair %zu (%" PRIu64 " here, %" PRIu64 " at the peer) is out of range (%" PRIu64
               " and %" PRIu64
               " blocks)",
               call, i, local_blocks[i], remote_blocks[i], local.units, remote.units);
      return false;
    }
    units->push_back({local_blocks[i] * local.unit_bytes, remote_blocks[i] * remote.unit_bytes, local.unit_bytes});
  }
  return true;
}

// One batch item of a cache spread over blocks, in order (as much of it as
// the blocks hold). `item_local`: the item is on this side.
bool ItemToBlockUnits(const char *call, uint64_t item_off, uint64_t item_bytes, const std::vector<uint64_t> &blocks,
                      const TensorGeometry &blocks_geo, bool item_local, std::vector<PlanUnit> *units) {
  const uint64_t unit = blocks_geo.unit_bytes;
  for (size_t i = 0; i < blocks.size() && i * unit < item_bytes; ++i) {
    if (blocks[i] >= blocks_geo.units) {
      LLM_LOGE("%s: block %" PRIu64 " is out of range (%" PRIu64 " blocks)", call, blocks[i], blocks_geo.units);
      return false;
    }
    const uint64_t len = std::min(unit, item_bytes - i * unit);
    const uint64_t item_at = item_off + i * unit;
    const uint64_t block_at = blocks[i] * unit;
    units->push_back(item_local ? PlanUnit{item_at, block_at, len} : PlanUnit{block_at, item_at, len});
  }
  return true;
}

}  // namespace

Clock::time_point LlmDataDist::LlmDataDistImpl::DeadlineFromNow(int32_t timeout_ms) const {
  return Clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? opts_.sync_timeout_ms : timeout_ms);
}

Status LlmDataDist::LlmDataDistImpl::ReadPeerTable(const std::string &remote, uint64_t table_addr,
                                                   Clock::time_point deadline, CacheTable *table) {
  std::lock_guard<std::mutex> lock(read_mu_);
  const uint64_t buf = reinterpret_cast<uint64_t>(read_buf_);
  std::string why;
  for (int attempt = 0; attempt < kTableReads; ++attempt) {
    int32_t ms = MillisLeft(deadline);
    if (ms == 0) break;
    std::vector<hixl::TransferOpDesc> first{{buf, table_addr, kTableFirstRead}};
    hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.TransferSync(remote.c_str(), hixl::READ, first, ms); });
    uint64_t used = 0;
    if (hs == hixl::SUCCESS && PeekUsedBytes(read_buf_, kTableFirstRead, &used, &why) != TableRead::kOk) {
      LLM_LOGE("the table of %s: %s", remote.c_str(), why.c_str());
      return LLM_FAILED;
    }
    if (hs == hixl::SUCCESS && used > kTableFirstRead && (ms = MillisLeft(deadline)) > 0) {
      std::vector<hixl::TransferOpDesc> rest{{buf + kTableFirstRead, table_addr + kTableFirstRead,
                                              static_cast<size_t>(used - kTableFirstRead)}};
      hs = OnEngine([&](hixl::Hixl &e) { return e.TransferSync(remote.c_str(), hixl::READ, rest, ms); });
    }
    if (hs != hixl::SUCCESS) {
      LLM_LOGE("reading the cache table of %s failed (hixl status %u)", remote.c_str(), hs);
      return FromHixl(hs);
    }
    TableRead r = DecodeTable(read_buf_, std::min<uint64_t>(used, kTableMapBytes), table, &why);
    if (r == TableRead::kOk) return LLM_SUCCESS;
    if (r == TableRead::kBad) {
      LLM_LOGE("the table of %s is malformed: %s", remote.c_str(), why.c_str());
      return LLM_FAILED;
    }
  }
  LLM_LOGE("the cache table of %s was being rewritten at each of %d reads, or the time ran out", remote.c_str(),
           kTableReads);
  return MillisLeft(deadline) == 0 ? LLM_TIMEOUT : LLM_FAILED;
}

Status LlmDataDist::LlmDataDistImpl::Resolve(const char *call, int64_t local_cache_id, const KvCacheKey &remote,
                                             Clock::time_point deadline, LocalCache *local, PeerLink *link,
                                             RemoteCache *remote_cache) {
  Status s = LookupLocal(call, local_cache_id, local);
  if (s != LLM_SUCCESS) return s;
  if (remote.cluster_id == cluster_id_) {
    LLM_LOGE("%s: cluster %" PRIu64 " is this one: use the local copies", call, remote.cluster_id);
    return LLM_PARAM_INVALID;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(remote.cluster_id);
    if (it == links_.end()) {
      LLM_LOGE("%s: cluster %" PRIu64 " is not linked", call, remote.cluster_id);
      return LLM_NOT_YET_LINK;
    }
    *link = it->second;
  }
  CacheTable table;
  s = ReadPeerTable(link->remote, link->table_addr, deadline, &table);
  if (s != LLM_SUCCESS) return s;
  const TableEntry *e = FindEntry(table, remote, &remote_cache->batch_index);
  if (e == nullptr) {
    LLM_LOGE("%s: %s does not exist", call, KeyText(remote).c_str());
    return LLM_KV_CACHE_NOT_EXIST;
  }
  std::string why;
  if (!ComputeGeometry(e->shape, e->data_type, &remote_cache->geo, &why)) {
    LLM_LOGE("%s: the peer lists %s with a bad shape: %s", call, KeyText(remote).c_str(), why.c_str());
    return LLM_FAILED;
  }
  remote_cache->entry = *e;
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::Move(const char *call, const std::string &remote, bool push, TransferPlan *plan,
                                          Clock::time_point deadline, std::vector<bool> *failed) {
  const std::vector<size_t> bounds = CutGroups(plan, kGroupBytes);
  for (size_t g = 0; g + 1 < bounds.size(); ++g) {
    const int32_t ms = MillisLeft(deadline);
    hixl::Status hs = hixl::TIMEOUT;
    if (ms > 0) {
      std::vector<hixl::TransferOpDesc> group(plan->descs.begin() + static_cast<ptrdiff_t>(bounds[g]),
                                              plan->descs.begin() + static_cast<ptrdiff_t>(bounds[g + 1]));
      hs = OnEngine(
          [&](hixl::Hixl &e) { return e.TransferSync(remote.c_str(), push ? hixl::WRITE : hixl::READ, group, ms); });
    }
    if (hs != hixl::SUCCESS) {
      MarkUnits(*plan, bounds[g], plan->descs.size(), failed);
      LLM_LOGE("%s: %s %s failed at descriptor %zu of %zu (hixl status %u)", call, push ? "push to" : "pull from",
               remote.c_str(), bounds[g], plan->descs.size(), hs);
      return FromHixl(hs);
    }
  }
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::Transfer(const KvOp &op, KvTransferReport *report) {
  KvTransferReport scratch;
  KvTransferReport &rep = report != nullptr ? *report : scratch;
  rep = KvTransferReport{};
  bool moved = false;
  Status s = RunTransfer(op, &rep, &moved);
  if (s == LLM_SUCCESS || moved) return s;
  // Refused before anything moved: every pair is one that did not land.
  const size_t pairs = std::max<size_t>({op.local_blocks.size(), op.remote_blocks.size(), size_t{1}});
  for (size_t i = 0; i < pairs; ++i) {
    const uint64_t lb = i < op.local_blocks.size() ? op.local_blocks[i] : op.local_batch;
    const uint64_t rb = i < op.remote_blocks.size() ? op.remote_blocks[i] : op.remote.batch_index;
    rep.failed_src_blocks.push_back(op.push ? lb : rb);
    rep.failed_dst_blocks.push_back(op.push ? rb : lb);
  }
  return s;
}

Status LlmDataDist::LlmDataDistImpl::RunTransfer(const KvOp &op, KvTransferReport *report, bool *moved) {
  KvTransferReport &rep = *report;
  Status s = CheckExtParam(op.call, op.ext, true);
  if (s != LLM_SUCCESS) return s;
  const bool blocks = !op.local_blocks.empty() || !op.remote_blocks.empty();
  if (!op.local_blocks.empty() && !op.remote_blocks.empty() && op.local_blocks.size() != op.remote_blocks.size()) {
    LLM_LOGE("%s: %zu source blocks and %zu destination blocks", op.call,
             op.push ? op.local_blocks.size() : op.remote_blocks.size(),
             op.push ? op.remote_blocks.size() : op.local_blocks.size());
    return LLM_PARAM_INVALID;
  }
  if (op.size == 0 || op.size < -1) {
    LLM_LOGE("%s: size %" PRId64 " (must be -1 or > 0)", op.call, op.size);
    return LLM_PARAM_INVALID;
  }
  const Clock::time_point deadline = DeadlineFromNow();
  LocalCache local;
  PeerLink link;
  RemoteCache rc;
  s = Resolve(op.call, op.local_cache_id, op.remote, deadline, &local, &link, &rc);
  if (s != LLM_SUCCESS) return s;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  const uint32_t remote_tensors = static_cast<uint32_t>(rc.entry.addrs.size());
  s = op.push ? PairTensors(op.call, op.ext, local.desc.num_tensors, remote_tensors, &pairs)
              : PairTensors(op.call, op.ext, remote_tensors, local.desc.num_tensors, &pairs);
  if (s != LLM_SUCCESS) return s;
  std::vector<TensorPair> tensors;
  for (const auto &p : pairs) {
    const uint32_t lt = op.push ? p.first : p.second;
    const uint32_t rt = op.push ? p.second : p.first;
    tensors.push_back({local.addrs[lt], rc.entry.addrs[rt]});
  }
  // Units, and the batches whole-cache transfers name.
  std::vector<PlanUnit> units;
  const uint64_t lunit = local.geo.unit_bytes;
  const uint64_t runit = rc.geo.unit_bytes;
  const uint64_t src_item = op.push ? lunit : runit;
  const uint64_t len = op.size < 0 ? src_item : static_cast<uint64_t>(op.size);
  bool ok = true;
  if (!op.local_blocks.empty() && !op.remote_blocks.empty()) {
    ok = BlockUnits(op.call, op.local_blocks, op.remote_blocks, local.geo, rc.geo, &units);
  } else if (blocks) {
    // A batch item on one side, blocks on the other.
    const bool item_local = op.local_blocks.empty();
    const uint32_t batch = item_local ? op.local_batch : rc.batch_index;
    const TensorGeometry &item_geo = item_local ? local.geo : rc.geo;
    ok = batch < item_geo.units && len <= item_geo.unit_bytes;
    if (!ok) {
      LLM_LOGE("%s: batch %u (of %" PRIu64 ") and size %" PRIu64 " do not fit items of %" PRIu64 " bytes", op.call,
               batch, item_geo.units, len, item_geo.unit_bytes);
    }
    ok = ok && ItemToBlockUnits(op.call, batch * item_geo.unit_bytes, len,
                                item_local ? op.remote_blocks : op.local_blocks,
                                item_local ? rc.geo : local.geo, item_local, &units);
  } else {
    ok = op.local_batch < local.geo.units && rc.batch_index < rc.geo.units && len <= lunit && len <= runit;
    if (!ok) {
      LLM_LOGE("%s: batch %u here (of %" PRIu64 ", %" PRIu64 " bytes) and %u at the peer (of %" PRIu64 ", %" PRIu64
               " bytes) cannot move %" PRIu64 " bytes",
               op.call, op.local_batch, local.geo.units, lunit, rc.batch_index, rc.geo.units, runit, len);
    }
    units.push_back({op.local_batch * lunit, rc.batch_index * runit, len});
  }
  if (!ok) return LLM_PARAM_INVALID;
  TransferPlan plan;
  BuildPlan(tensors, units, &plan);
  rep.bytes = plan.bytes;
  rep.descriptors = plan.descs.size();
  std::vector<bool> failed(units.size(), false);
  *moved = true;
  s = Move(op.call, link.remote, op.push, &plan, deadline, &failed);
  if (s == LLM_SUCCESS) return s;
  for (size_t i = 0; i < units.size(); ++i) {
    if (!failed[i]) continue;
    const uint64_t lb = op.local_blocks.empty() ? op.local_batch : op.local_blocks[i];
    const uint64_t rb = op.remote_blocks.empty() ? rc.batch_index : op.remote_blocks[i];
    rep.failed_src_blocks.push_back(op.push ? lb : rb);
    rep.failed_dst_blocks.push_back(op.push ? rb : lb);
  }
  return s;
}

}  // namespace llm_datadist
