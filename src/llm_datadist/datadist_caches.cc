// datadist_caches.cc: this side's caches: registration, allocation, local
// copies, and the table that lists them for peers.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "datadist_impl.h"
#include "llm_log.h"

namespace llm_datadist {
namespace {

// Ranges that touch or overlap become one: back-to-back tensors are one region.
std::vector<std::pair<uint64_t, uint64_t>> CoverRanges(const std::vector<uint64_t> &addrs, uint64_t len) {
  std::vector<uint64_t> sorted = addrs;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (uint64_t a : sorted) {
    if (!out.empty() && a <= out.back().first + out.back().second) {
      out.back().second = std::max(out.back().second, a + len - out.back().first);
    } else {
      out.emplace_back(a, len);
    }
  }
  return out;
}

bool ValidId(uint64_t id) { return id != UINT64_MAX; }

// The keys as the table lists them; false (logged) for a malformed one.
bool ToTableKeys(const char *call, const std::vector<KvCacheKey> &keys, uint64_t units, std::vector<TableKey> *out) {
  for (const KvCacheKey &k : keys) {
    TableKey t;
    t.kind = k.kind;
    t.model_id = k.model_id;
    if (k.kind == KvCacheKeyKind::kRequestKey) {
      if (ValidId(k.req_id) == ValidId(k.prefix_id)) {
        LLM_LOGE("%s: a request key needs exactly one of req_id and prefix_id (%" PRIu64 ", %" PRIu64 ")", call,
                 k.req_id, k.prefix_id);
        return false;
      }
      if (k.batch_index >= units) {
        LLM_LOGE("%s: a request key names batch %u of a cache of %" PRIu64, call, k.batch_index, units);
        return false;
      }
      t.req_id = k.req_id;
      t.prefix_id = k.prefix_id;
      t.batch_index = k.batch_index;
    } else if (k.kind != KvCacheKeyKind::kBlocksKey) {
      LLM_LOGE("%s: a cache is registered under blocks or request keys only (kind %u)", call,
               static_cast<unsigned>(k.kind));
      return false;
    }
    // A key given twice: the later one stands (as LLM-DataDist's cache_keys).
    out->erase(std::remove_if(out->begin(), out->end(),
                              [&](const TableKey &o) {
                                return o.kind == t.kind && o.model_id == t.model_id && o.req_id == t.req_id &&
                                       o.prefix_id == t.prefix_id;
                              }),
               out->end());
    out->push_back(t);
  }
  return true;
}

// Copies into the published table. Peers READ the table while it is
// rewritten, by design (cache_table.h: a torn image fails its checksum and
// is read again), so the copy is a byte loop left out of ThreadSanitizer's
// view: TSan would report the engine's send of the table (a peer's READ) as
// a race with it, a race the checksum exists for.
__attribute__((no_sanitize("thread"))) void CopyIntoTable(uint8_t *dst, const uint8_t *src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = src[i];
}

bool SameKey(const TableKey &a, const TableKey &b) {
  return a.kind == b.kind && a.model_id == b.model_id && a.req_id == b.req_id && a.prefix_id == b.prefix_id;
}

}  // namespace

Status LlmDataDist::LlmDataDistImpl::RegisterRange(uint64_t addr, uint64_t len, CachePlacement placement) {
  auto key = std::make_pair(addr, len);
  auto it = ranges_.find(key);
  if (it != ranges_.end()) {
    ++it->second.users;
    return LLM_SUCCESS;
  }
  hixl::MemDesc d{};
  d.addr = static_cast<uintptr_t>(addr);
  d.len = static_cast<size_t>(len);
  hixl::MemHandle h = nullptr;
  const hixl::MemType type = placement == CachePlacement::kHost ? hixl::MEM_HOST : hixl::MEM_DEVICE;
  hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.RegisterMem(d, type, h); });
  if (hs == hixl::UNSUPPORTED && type == hixl::MEM_DEVICE) {
    LLM_LOGE("RegisterKvCache: placement kDevice is hixl's MEM_DEVICE, which this build or host does not support "
             "(no accelerator runtime); use kHost for host memory");
    return LLM_FEATURE_NOT_ENABLED;
  }
  if (hs != hixl::SUCCESS) {
    LLM_LOGE("RegisterKvCache: hixl refused 0x%" PRIx64 "+%" PRIu64 " (hixl status %u)", addr, len, hs);
    return FromHixl(hs);
  }
  ranges_[key] = RangeReg{h, 1, type};
  return LLM_SUCCESS;
}

void LlmDataDist::LlmDataDistImpl::ReleaseRanges(const std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
  // Caller holds mu_. Only on failed registrations: no peer has seen these
  // caches, so a range no cache uses is deregistered at once.
  for (const auto &r : ranges) {
    auto it = ranges_.find(r);
    if (it == ranges_.end() || --it->second.users > 0) continue;
    const hixl::MemHandle h = it->second.handle;
    ranges_.erase(it);
    hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.DeregisterMem(h); });
    if (hs != hixl::SUCCESS) {
      LLM_LOGW("0x%" PRIx64 "+%" PRIu64 " stays registered: hixl could not deregister it (hixl status %u)", r.first,
               r.second, hs);
    }
  }
}

Status LlmDataDist::LlmDataDistImpl::PublishLocked() {
  CacheTable table;
  table.cluster_id = cluster_id_;
  table.generation = ++table_generation_;
  for (const auto &kv : caches_) {
    TableEntry e;
    e.cache_id = kv.first;
    e.placement = static_cast<uint32_t>(kv.second.desc.placement);
    e.data_type = static_cast<int32_t>(kv.second.desc.data_type);
    e.shape = kv.second.desc.shape;
    e.keys = kv.second.keys;
    e.addrs = kv.second.addrs;
    table.entries.push_back(std::move(e));
  }
  std::vector<uint8_t> image;
  EncodeTable(table, &image);
  if (image.size() > kTableRegionLen) {
    LLM_LOGE("the cache table would take %zu bytes; it has room for %" PRIu64, image.size(), kTableRegionLen);
    return LLM_OUT_OF_MEMORY;
  }
  // The body first, the header (size, checksum) last. A peer reading
  // meanwhile may see any mix of old and new bytes: the checksum does not
  // match it, and the peer reads again.
  CopyIntoTable(table_ + kHeaderBytes, image.data() + kHeaderBytes, image.size() - kHeaderBytes);
  CopyIntoTable(table_, image.data(), kHeaderBytes);
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::AddCache(LocalCache cache, int64_t &cache_id) {
  // Caller holds mu_.
  for (const auto &kv : caches_) {
    for (const TableKey &mine : cache.keys) {
      for (const TableKey &theirs : kv.second.keys) {
        if (SameKey(mine, theirs)) {
          LLM_LOGE("RegisterKvCache: cache %" PRId64 " is registered under that key (model_id %" PRIu64 ") already",
                   kv.first, mine.model_id);
          return LLM_PARAM_INVALID;
        }
      }
    }
  }
  cache.regions = CoverRanges(cache.addrs, cache.geo.tensor_bytes);
  for (size_t i = 0; i < cache.regions.size(); ++i) {
    Status s = RegisterRange(cache.regions[i].first, cache.regions[i].second, cache.desc.placement);
    if (s != LLM_SUCCESS) {
      ReleaseRanges({cache.regions.begin(), cache.regions.begin() + static_cast<ptrdiff_t>(i)});
      return s;
    }
  }
  const int64_t id = next_cache_id_++;
  auto regions = cache.regions;
  caches_[id] = std::move(cache);
  Status s = PublishLocked();
  if (s != LLM_SUCCESS) {
    caches_.erase(id);
    ReleaseRanges(regions);
    return s;
  }
  cache_id = id;
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::RegisterCache(const CacheDesc &desc, const std::vector<uint64_t> &addrs,
                                                   const std::vector<KvCacheKey> &keys, int64_t &cache_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    LLM_LOGE("RegisterKvCache: not initialized");
    return LLM_FAILED;
  }
  LocalCache cache;
  std::string why;
  if (addrs.empty() || addrs.size() != desc.num_tensors ||
      std::find(addrs.begin(), addrs.end(), 0u) != addrs.end()) {
    LLM_LOGE("RegisterKvCache: %zu addresses for num_tensors %u (need one non-zero address per tensor)", addrs.size(),
             desc.num_tensors);
    return LLM_PARAM_INVALID;
  }
  if (!ComputeGeometry(desc.shape, desc.data_type, &cache.geo, &why)) {
    LLM_LOGE("RegisterKvCache: %s", why.c_str());
    return LLM_PARAM_INVALID;
  }
  if (desc.placement != CachePlacement::kHost && desc.placement != CachePlacement::kDevice) {
    LLM_LOGE("RegisterKvCache: placement %u is not kHost or kDevice", static_cast<unsigned>(desc.placement));
    return LLM_PARAM_INVALID;
  }
  for (uint64_t a : addrs) {
    if (a > UINT64_MAX - cache.geo.tensor_bytes) {
      LLM_LOGE("RegisterKvCache: tensor at 0x%" PRIx64 " of %" PRIu64 " bytes wraps around", a,
               cache.geo.tensor_bytes);
      return LLM_PARAM_INVALID;
    }
  }
  if (!ToTableKeys("RegisterKvCache", keys, cache.geo.units, &cache.keys)) return LLM_PARAM_INVALID;
  cache.desc.placement = desc.placement;
  cache.desc.num_tensors = desc.num_tensors;
  cache.desc.data_type = desc.data_type;
  cache.desc.shape = desc.shape;
  cache.addrs = addrs;
  return AddCache(std::move(cache), cache_id);
}

Status LlmDataDist::LlmDataDistImpl::AllocateCache(const CacheDesc &desc, const std::vector<KvCacheKey> &keys,
                                                   Cache &cache) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    LLM_LOGE("AllocateCache: not initialized");
    return LLM_FAILED;
  }
  LocalCache local;
  std::string why;
  if (desc.num_tensors == 0 || !ComputeGeometry(desc.shape, desc.data_type, &local.geo, &why)) {
    LLM_LOGE("AllocateCache: %s", desc.num_tensors == 0 ? "num_tensors is 0" : why.c_str());
    return LLM_PARAM_INVALID;
  }
  if (desc.placement == CachePlacement::kDevice) {
    LLM_LOGE("AllocateCache: placement kDevice needs an accelerator runtime, which this build or host does not "
             "have (hixl's MEM_DEVICE is unsupported); allocate kHost");
    return LLM_FEATURE_NOT_ENABLED;
  }
  if (desc.placement != CachePlacement::kHost) {
    LLM_LOGE("AllocateCache: placement %u is not kHost or kDevice", static_cast<unsigned>(desc.placement));
    return LLM_PARAM_INVALID;
  }
  if (local.geo.tensor_bytes > (uint64_t{1} << 62) / desc.num_tensors) {
    LLM_LOGE("AllocateCache: %u tensors of %" PRIu64 " bytes is too much", desc.num_tensors, local.geo.tensor_bytes);
    return LLM_OUT_OF_MEMORY;
  }
  if (!ToTableKeys("AllocateCache", keys, local.geo.units, &local.keys)) return LLM_PARAM_INVALID;
  // The tensors back to back in one mapping: whole-cache transfers are one descriptor.
  const auto alloc_len = static_cast<size_t>(local.geo.tensor_bytes * desc.num_tensors);
  if (!MapHostCache(alloc_len, &local.alloc)) {
    LLM_LOGE("AllocateCache: cannot map %zu bytes: %s", alloc_len, std::strerror(errno));
    return LLM_OUT_OF_MEMORY;
  }
  void *p = local.alloc.base;
  local.desc.placement = desc.placement;
  local.desc.num_tensors = desc.num_tensors;
  local.desc.data_type = desc.data_type;
  local.desc.shape = desc.shape;
  for (uint32_t t = 0; t < desc.num_tensors; ++t) {
    local.addrs.push_back(reinterpret_cast<uint64_t>(p) + t * local.geo.tensor_bytes);
  }
  int64_t id = -1;
  const std::vector<uint64_t> addrs = local.addrs;
  HostCacheMemory alloc = local.alloc;
  Status s = AddCache(std::move(local), id);
  if (s != LLM_SUCCESS) {
    UnmapHostCache(&alloc);
    return s;
  }
  cache.cache_id = id;
  cache.tensor_addrs.assign(addrs.begin(), addrs.end());
  cache.cache_desc.placement = desc.placement;
  cache.cache_desc.num_tensors = desc.num_tensors;
  cache.cache_desc.data_type = desc.data_type;
  cache.cache_desc.shape = desc.shape;
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::UnregisterCache(int64_t cache_id) {
  return DropCache("UnregisterKvCache", cache_id, /*allocated=*/false);
}

Status LlmDataDist::LlmDataDistImpl::DeallocateCache(int64_t cache_id) {
  return DropCache("DeallocateCache", cache_id, /*allocated=*/true);
}

Status LlmDataDist::LlmDataDistImpl::DropCache(const char *call, int64_t cache_id, bool allocated) {
  std::vector<hixl::MemHandle> handles;
  LocalCache gone;
  uint64_t gen = 0;  // the engine the handles are of
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      LLM_LOGE("%s: not initialized", call);
      return LLM_FAILED;
    }
    auto it = caches_.find(cache_id);
    if (it == caches_.end()) {
      LLM_LOGI("%s: cache %" PRId64 " does not exist (released already?)", call, cache_id);
      return LLM_SUCCESS;
    }
    if ((it->second.alloc.base != nullptr) != allocated) {
      LLM_LOGE("%s: cache %" PRId64 " was %s; release it with %s", call, cache_id,
               allocated ? "registered" : "allocated", allocated ? "UnregisterKvCache" : "DeallocateCache");
      return LLM_PARAM_INVALID;
    }
    gone = std::move(it->second);
    caches_.erase(it);
    // Unlisted first: a peer that reads the table from now on does not find it.
    Status s = PublishLocked();
    if (s != LLM_SUCCESS) return s;
    for (const auto &r : gone.regions) {
      auto rit = ranges_.find(r);
      if (rit != ranges_.end() && --rit->second.users == 0) {
        handles.push_back(rit->second.handle);
        ranges_.erase(rit);
      }
    }
    std::shared_lock<std::shared_mutex> reader(engine_mu_);
    gen = engine_gen_;
  }
  // Without mu_: hixl waits here for transfers in flight and for peers to let go.
  Status result = LLM_SUCCESS;
  for (hixl::MemHandle h : handles) {
    hixl::Status hs = OnEngine([&](hixl::Hixl &e) {
      // The engine was replaced meanwhile (SetRole, Link): the memory went
      // with the old one, and was not registered with this one.
      return gen == engine_gen_ ? e.DeregisterMem(h) : hixl::SUCCESS;
    });
    if (hs != hixl::SUCCESS) {
      LLM_LOGE("%s: cache %" PRId64 ": hixl could not deregister its memory (hixl status %u): it must stay mapped",
               call, cache_id, hs);
      result = LLM_FAILED;
    }
  }
  if (result == LLM_SUCCESS) UnmapHostCache(&gone.alloc);
  return result;
}

Status LlmDataDist::LlmDataDistImpl::RemoveCacheKey(const KvCacheKey &key) {
  if (key.kind != KvCacheKeyKind::kRequestKey || ValidId(key.req_id) == ValidId(key.prefix_id)) {
    LLM_LOGE("RemoveKvCacheKey: a request key with exactly one of req_id and prefix_id is needed (kind %u, req "
             "%" PRIu64 ", prefix %" PRIu64 ")",
             static_cast<unsigned>(key.kind), key.req_id, key.prefix_id);
    return LLM_PARAM_INVALID;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    LLM_LOGE("RemoveKvCacheKey: not initialized");
    return LLM_FAILED;
  }
  TableKey gone;
  gone.kind = key.kind;
  gone.model_id = key.model_id;
  gone.req_id = key.req_id;
  gone.prefix_id = key.prefix_id;
  size_t removed = 0;
  for (auto &kv : caches_) {
    auto &keys = kv.second.keys;
    const size_t before = keys.size();
    keys.erase(std::remove_if(keys.begin(), keys.end(), [&](const TableKey &k) { return SameKey(k, gone); }),
               keys.end());
    removed += before - keys.size();
  }
  if (removed == 0) {
    LLM_LOGI("RemoveKvCacheKey: no cache has req %" PRIu64 " prefix %" PRIu64 " model %" PRIu64 " (removed already?)",
             key.req_id, key.prefix_id, key.model_id);
    return LLM_SUCCESS;
  }
  // Peers that read the table from now on do not find it.
  return PublishLocked();
}

Status LlmDataDist::LlmDataDistImpl::LookupLocal(const char *call, int64_t cache_id, LocalCache *out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    LLM_LOGE("%s: not initialized", call);
    return LLM_FAILED;
  }
  auto it = caches_.find(cache_id);
  if (it == caches_.end()) {
    LLM_LOGE("%s: local cache %" PRId64 " does not exist", call, cache_id);
    return LLM_KV_CACHE_NOT_EXIST;
  }
  *out = it->second;
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::LookupPair(const char *call, const Cache &src, const Cache &dst, LocalCache *s,
                                                LocalCache *d) {
  Status st = LookupLocal(call, src.cache_id, s);
  return st == LLM_SUCCESS ? LookupLocal(call, dst.cache_id, d) : st;
}

Status LlmDataDist::LlmDataDistImpl::CopyCache(const Cache &src, const Cache &dst, uint32_t src_batch,
                                               uint32_t dst_batch, uint64_t offset, int64_t size) {
  LocalCache s, d;
  Status st = LookupPair("CopyKvCache", src, dst, &s, &d);
  if (st != LLM_SUCCESS) return st;
  const uint64_t unit = s.geo.unit_bytes;
  if (s.desc.num_tensors != d.desc.num_tensors || unit != d.geo.unit_bytes || src_batch >= s.geo.units ||
      dst_batch >= d.geo.units || offset >= unit || size == 0 || size < -1 ||
      (size > 0 && static_cast<uint64_t>(size) > unit - offset)) {
    LLM_LOGE("CopyKvCache: caches of %u/%u tensors and %" PRIu64 "/%" PRIu64
             " bytes per batch, batches %u/%u of %" PRIu64
             "/%" PRIu64 ", offset %" PRIu64 " size %" PRId64 " do not fit",
             s.desc.num_tensors, d.desc.num_tensors, unit, d.geo.unit_bytes, src_batch, dst_batch, s.geo.units,
             d.geo.units, offset, size);
    return LLM_PARAM_INVALID;
  }
  const uint64_t len = size < 0 ? unit - offset : static_cast<uint64_t>(size);
  for (uint32_t t = 0; t < s.desc.num_tensors; ++t) {
    std::memmove(reinterpret_cast<void *>(d.addrs[t] + dst_batch * unit + offset),
                 reinterpret_cast<const void *>(s.addrs[t] + src_batch * unit + offset), len);
  }
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::CopyBlocks(const Cache &src, const Cache &dst,
                                                const std::vector<uint64_t> &src_blocks,
                                                const std::vector<std::vector<uint64_t>> &dst_blocks_list) {
  LocalCache s, d;
  Status st = LookupPair("CopyKvBlocks", src, dst, &s, &d);
  if (st != LLM_SUCCESS) return st;
  const uint64_t unit = s.geo.unit_bytes;
  bool ok = !src_blocks.empty() && !dst_blocks_list.empty() && s.desc.num_tensors == d.desc.num_tensors &&
            unit == d.geo.unit_bytes;
  for (uint64_t b : src_blocks) ok = ok && b < s.geo.units;
  for (const auto &list : dst_blocks_list) {
    ok = ok && list.size() == src_blocks.size();
    for (uint64_t b : list) ok = ok && b < d.geo.units;
  }
  if (!ok) {
    LLM_LOGE("CopyKvBlocks: %zu source blocks to %zu lists between caches of %" PRIu64 "/%" PRIu64
             " blocks of %" PRIu64 "/%" PRIu64 " bytes and %u/%u tensors: a list is empty or of another length, a "
             "block is out of range, or the caches do not match",
             src_blocks.size(), dst_blocks_list.size(), s.geo.units, d.geo.units, unit, d.geo.unit_bytes,
             s.desc.num_tensors, d.desc.num_tensors);
    return LLM_PARAM_INVALID;
  }
  for (const auto &list : dst_blocks_list) {
    for (uint32_t t = 0; t < s.desc.num_tensors; ++t) {
      for (size_t i = 0; i < src_blocks.size(); ++i) {
        std::memmove(reinterpret_cast<void *>(d.addrs[t] + list[i] * unit),
                     reinterpret_cast<const void *>(s.addrs[t] + src_blocks[i] * unit), unit);
      }
    }
  }
  return LLM_SUCCESS;
}

}  // namespace llm_datadist
