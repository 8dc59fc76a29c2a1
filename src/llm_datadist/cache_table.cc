#include "cache_table.h"

namespace llm_datadist {
namespace {

constexpr size_t kChecksumAt = 40;
constexpr uint32_t kMaxDims = 32;
constexpr uint32_t kMaxCount = 1u << 22;  // tensors, keys or entries

uint64_t Fnv1a(uint64_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t Checksum(const uint8_t *data, size_t used) {
  uint64_t h = Fnv1a(0xcbf29ce484222325ULL, data, kChecksumAt);
  return Fnv1a(h, data + kChecksumAt + 8, used - kChecksumAt - 8);
}

class Writer {
 public:
  explicit Writer(std::vector<uint8_t> *out) : out_(out) {}
  void U32(uint32_t v) { Put(v, 4); }
  void U64(uint64_t v) { Put(v, 8); }
  void Zeros(size_t n) { out_->insert(out_->end(), n, 0); }
  void PutAt(size_t at, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) (*out_)[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }

 private:
  void Put(uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) out_->push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> *out_;
};

// Bounds-checked little-endian reads; once one fails, every later one does.
class Reader {
 public:
  Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  bool U32(uint32_t *v) {
    uint64_t x = 0;
    if (!Get(4, &x)) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool U64(uint64_t *v) { return Get(8, v); }
  bool Skip(size_t n) {
    if (!ok_ || n_ - at_ < n) return ok_ = false;
    at_ += n;
    return true;
  }
  size_t left() const { return n_ - at_; }

 private:
  bool Get(size_t n, uint64_t *v) {
    if (!ok_ || n_ - at_ < n) return ok_ = false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) x |= static_cast<uint64_t>(p_[at_ + i]) << (8 * i);
    at_ += n;
    *v = x;
    return true;
  }
  const uint8_t *p_;
  size_t n_;
  size_t at_ = 0;
  bool ok_ = true;
};

bool DecodeEntry(Reader &r, TableEntry *e, std::string *why) {
  uint64_t id = 0;
  uint32_t placement = 0, dtype = 0, ntensors = 0, ndims = 0, nkeys = 0;
  if (!r.U64(&id) || !r.U32(&placement) || !r.U32(&dtype) || !r.U32(&ntensors) || !r.U32(&ndims) ||
      !r.U32(&nkeys) || !r.Skip(4)) {
    *why = "an entry is cut short";
    return false;
  }
  // Each count is checked against the bytes left before anything is reserved.
  if (ndims == 0 || ndims > kMaxDims || ntensors == 0 || ntensors > kMaxCount || nkeys > kMaxCount ||
      r.left() / 8 < ndims + uint64_t{ntensors} + uint64_t{nkeys} * 4) {
    *why = "an entry has " + std::to_string(ndims) + " dims, " + std::to_string(ntensors) + " tensors and " +
           std::to_string(nkeys) + " keys: out of bounds";
    return false;
  }
  e->cache_id = static_cast<int64_t>(id);
  e->placement = placement;
  e->data_type = static_cast<int32_t>(dtype);
  e->shape.resize(ndims);
  for (auto &d : e->shape) {
    uint64_t v = 0;
    r.U64(&v);
    d = static_cast<int64_t>(v);
  }
  e->keys.resize(nkeys);
  for (auto &k : e->keys) {
    uint32_t kind = 0;
    r.U32(&kind);
    r.U32(&k.batch_index);
    r.U64(&k.model_id);
    r.U64(&k.req_id);
    r.U64(&k.prefix_id);
    if (kind != static_cast<uint32_t>(KvCacheKeyKind::kBlocksKey) &&
        kind != static_cast<uint32_t>(KvCacheKeyKind::kRequestKey)) {
      *why = "a key of unknown kind " + std::to_string(kind);
      return false;
    }
    k.kind = static_cast<KvCacheKeyKind>(kind);
  }
  e->addrs.resize(ntensors);
  for (auto &a : e->addrs) r.U64(&a);
  return true;
}

}  // namespace

void EncodeTable(const CacheTable &table, std::vector<uint8_t> *out) {
  out->clear();
  Writer w(out);
  w.U64(kTableMagic);
  w.U32(kTableVersion);
  w.U32(kHeaderBytes);
  w.U64(table.cluster_id);
  w.U64(table.generation);
  w.U64(0);  // used bytes, below
  w.U64(0);  // checksum, below
  w.U32(static_cast<uint32_t>(table.entries.size()));
  w.Zeros(kHeaderBytes - out->size());
  for (const TableEntry &e : table.entries) {
    w.U64(static_cast<uint64_t>(e.cache_id));
    w.U32(e.placement);
    w.U32(static_cast<uint32_t>(e.data_type));
    w.U32(static_cast<uint32_t>(e.addrs.size()));
    w.U32(static_cast<uint32_t>(e.shape.size()));
    w.U32(static_cast<uint32_t>(e.keys.size()));
    w.Zeros(4);
    for (int64_t d : e.shape) w.U64(static_cast<uint64_t>(d));
    for (const TableKey &k : e.keys) {
      w.U32(static_cast<uint32_t>(k.kind));
      w.U32(k.batch_index);
      w.U64(k.model_id);
      w.U64(k.req_id);
      w.U64(k.prefix_id);
    }
    for (uint64_t a : e.addrs) w.U64(a);
  }
  w.PutAt(32, out->size(), 8);
  w.PutAt(kChecksumAt, Checksum(out->data(), out->size()), 8);
}

TableRead PeekUsedBytes(const uint8_t *data, size_t size, uint64_t *used, std::string *why) {
  Reader r(data, size);
  uint64_t magic = 0, cluster = 0, gen = 0;
  uint32_t version = 0, header = 0;
  if (!r.U64(&magic) || !r.U32(&version) || !r.U32(&header) || !r.U64(&cluster) || !r.U64(&gen) || !r.U64(used)) {
    *why = "shorter than a header";
    return TableRead::kBad;
  }
  if (magic != kTableMagic || version != kTableVersion || header != kHeaderBytes) {
    *why = "not a cache table of this version";
    return TableRead::kBad;
  }
  if (*used < kHeaderBytes || *used > kTableRegionLen) {
    *why = "it says it holds " + std::to_string(*used) + " bytes";
    return TableRead::kBad;
  }
  return TableRead::kOk;
}

TableRead DecodeTable(const uint8_t *data, size_t size, CacheTable *table, std::string *why) {
  uint64_t used = 0;
  if (PeekUsedBytes(data, size, &used, why) != TableRead::kOk) return TableRead::kBad;
  if (used > size) {
    *why = "cut short";
    return TableRead::kBad;
  }
  uint64_t sum = 0;
  Reader at_sum(data + kChecksumAt, 8);
  at_sum.U64(&sum);
  if (sum != Checksum(data, used)) return TableRead::kTorn;
  Reader r(data, used);
  uint64_t skip = 0;
  uint32_t count = 0;
  r.U64(&skip);
  r.Skip(8);
  r.U64(&table->cluster_id);
  r.U64(&table->generation);
  r.Skip(16);
  r.U32(&count);
  r.Skip(kHeaderBytes - 52);
  if (count > kMaxCount || r.left() / 48 < count) {
    *why = "it says it has " + std::to_string(count) + " entries";
    return TableRead::kBad;
  }
  table->entries.assign(count, TableEntry{});
  for (TableEntry &e : table->entries) {
    if (!DecodeEntry(r, &e, why)) return TableRead::kBad;
  }
  if (r.left() != 0) {
    *why = std::to_string(r.left()) + " bytes after the last entry";
    return TableRead::kBad;
  }
  return TableRead::kOk;
}

const TableEntry *FindEntry(const CacheTable &table, const KvCacheKey &key, uint32_t *batch_index) {
  for (const TableEntry &e : table.entries) {
    if (key.kind == KvCacheKeyKind::kCacheId) {
      if (e.cache_id == key.cache_id) {
        *batch_index = key.batch_index;
        return &e;
      }
      continue;
    }
    for (const TableKey &k : e.keys) {
      if (k.kind != key.kind || k.model_id != key.model_id) continue;
      const bool by_req = key.req_id != UINT64_MAX;
      if (key.kind == KvCacheKeyKind::kRequestKey &&
          !(by_req ? k.req_id == key.req_id : (key.prefix_id != UINT64_MAX && k.prefix_id == key.prefix_id))) {
        continue;
      }
      *batch_index = k.batch_index;
      return &e;
    }
  }
  return nullptr;
}

}  // namespace llm_datadist
