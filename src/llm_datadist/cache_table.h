// cache_table.h: the table of caches a side publishes to its peers.
//
// Each LlmDataDist keeps its table in memory registered with its hixl engine;
// a linked peer finds that region in the engine's region list (it is the
// one of length kTableRegionLen) and READs it one-sidedly whenever it needs
// a cache's addresses: no socket besides hixl's link. The owner rewrites the
// image in place as caches come and go; a reader may catch it half-written,
// which the checksum tells (it then reads again). Everything a reader
// decodes came from the network: every count and length is checked.
//
// Image (little-endian):
//   header, kHeaderBytes: magic u64, version u32, header bytes u32,
//     cluster_id u64, generation u64, used bytes u64, checksum u64,
//     entry count u32, 12 bytes zero
//   entries, each: cache_id i64, placement u32, data_type i32,
//     num_tensors u32, ndims u32, nkeys u32, 4 bytes zero,
//     shape i64 x ndims,
//     keys x nkeys: kind u32, batch_index u32, model_id u64, req_id u64, prefix_id u64,
//     tensor addresses u64 x num_tensors
// The checksum (FNV-1a, 64 bits) covers the image but its own 8 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {

constexpr uint64_t kTableMagic = 0x315442544B4C5848ULL;  // "HXLKTBT1"
constexpr uint32_t kTableVersion = 1;
constexpr size_t kHeaderBytes = 64;
// The table's mapping, and the length it is registered with: one no tensor
// of a cache has in practice (odd), which is how a peer finds it.
constexpr uint64_t kTableMapBytes = 16ULL << 20;
constexpr uint64_t kTableRegionLen = kTableMapBytes - 0x4B57;
// What a reader takes in its first READ: small tables need no second one.
constexpr uint64_t kTableFirstRead = 64ULL << 10;

struct TableKey {
  KvCacheKeyKind kind = KvCacheKeyKind::kBlocksKey;
  uint32_t batch_index = 0;
  uint64_t model_id = 0;
  uint64_t req_id = UINT64_MAX;
  uint64_t prefix_id = UINT64_MAX;
};

struct TableEntry {
  int64_t cache_id = -1;
  uint32_t placement = 0;
  int32_t data_type = 0;
  std::vector<int64_t> shape;
  std::vector<TableKey> keys;
  std::vector<uint64_t> addrs;  // one per tensor
};

struct CacheTable {
  uint64_t cluster_id = 0;
  uint64_t generation = 0;
  std::vector<TableEntry> entries;
};

void EncodeTable(const CacheTable &table, std::vector<uint8_t> *out);

enum class TableRead { kOk, kTorn, kBad };
// The used size a header announces: kOk, kBad (not a table: wrong magic or
// version, or a size out of bounds), never kTorn.
TableRead PeekUsedBytes(const uint8_t *data, size_t size, uint64_t *used, std::string *why);
// kTorn: the checksum does not match (caught mid-rewrite: read again);
// kBad: malformed.
TableRead DecodeTable(const uint8_t *data, size_t size, CacheTable *table, std::string *why);

// The entry `key` names (kCacheId: by cache_id; kBlocksKey: by model_id;
// kRequestKey: by req_id or prefix_id and model_id), or null. *batch_index
// gets the batch the key names (the key's own for kCacheId).
const TableEntry *FindEntry(const CacheTable &table, const KvCacheKey &key, uint32_t *batch_index);

}  // namespace llm_datadist
