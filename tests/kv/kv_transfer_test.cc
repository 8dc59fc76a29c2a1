// kv_transfer_test.cc: pulls and pushes between two processes move exactly
// the bytes named: random block lists of every layer and of layer ranges,
// whole caches by batch index, caches found by key, 300 tensors, a cache
// registered after the link, and the descriptors merging makes.
#include <set>

#include "kv/kv_fixture.h"

namespace hixl_test {
namespace {

constexpr uint64_t kPeerSeed = 5;
constexpr uint64_t kLocalSeed = 9;
// 8 tensors (4 layers of K and V), 64 blocks of 8 heads x 64 dims in bf16: 1 KiB a block.
const char kShape[] = "64,8,64";
const std::vector<int64_t> kDims{64, 8, 64};
constexpr size_t kUnit = 1024;

// Every byte of tensors [t0, t1) outside `blocks` is zero.
bool ZeroOutside(const LocalKv &kv, size_t t0, size_t t1, const std::vector<uint64_t> &blocks) {
  std::set<uint64_t> written(blocks.begin(), blocks.end());
  for (size_t t = t0; t < t1; ++t) {
    const auto *p = reinterpret_cast<const uint8_t *>(kv.memory->addrs()[t]);
    for (size_t b = 0; b < kv.units; ++b) {
      if (written.count(b) != 0) continue;
      for (size_t i = 0; i < kv.unit; ++i) {
        if (p[b * kv.unit + i] != 0) return false;
      }
    }
  }
  return true;
}

// Local tensors [t0, t1) hold, at dst[k], the peer's tensor t + shift at src[k].
uint64_t Expected(uint64_t seed, size_t t0, size_t t1, long shift, const std::vector<uint64_t> &src) {
  return ExpectedDigest(
      seed, t0, t1, kUnit, src, [shift](size_t t) { return static_cast<size_t>(static_cast<long>(t) + shift); },
      [&src](size_t k) { return src[k]; });
}

class KvTransferTest : public KvTest {};

TEST_P(KvTransferTest, PullRandomBlocksOfEveryLayer) {
  const int64_t remote = PeerCache("8 27 " + std::to_string(kPeerSeed) + " sep " + kShape);
  ASSERT_GT(remote, 0);
  auto local = MakeLocal(8, kDims, 0);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  const auto src = RandomBlocks(24, 64, 1);
  const auto dst = RandomBlocks(24, 64, 2);
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, src, dst), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 8, kUnit, dst), Expected(kPeerSeed, 0, 8, 0, src));
  EXPECT_TRUE(ZeroOutside(*local, 0, 8, dst));
}

TEST_P(KvTransferTest, PullALayerRangeIntoOtherLayers) {
  const int64_t remote = PeerCache("8 27 " + std::to_string(kPeerSeed) + " sep " + kShape);
  auto local = MakeLocal(8, kDims, 0);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  ld::KvCacheExtParam ext{};
  ext.src_layer_range = {2, 3};  // tensors 4..7 of the peer
  ext.dst_layer_range = {0, 1};  // into tensors 0..3 here
  const auto src = RandomBlocks(10, 64, 3);
  const auto dst = RandomBlocks(10, 64, 4);
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, src, dst, ext), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 4, kUnit, dst), Expected(kPeerSeed, 0, 4, 4, src));
  EXPECT_TRUE(ZeroOutside(*local, 0, 4, dst));
  EXPECT_TRUE(ZeroOutside(*local, 4, 8, {}));
  // One layer of three tensors each: layer 1 is tensors 3..5.
  ext.src_layer_range = {1, 1};
  ext.dst_layer_range = {0, 0};
  ext.tensor_num_per_layer = 3;
  auto odd = MakeLocal(6, kDims, 0);
  const int64_t six = PeerCache("6 27 " + std::to_string(kPeerSeed) + " sep " + kShape);
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(six), odd->cache, src, dst, ext), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(odd->memory->addrs(), 0, 3, kUnit, dst), Expected(kPeerSeed, 0, 3, 3, src));
}

TEST_P(KvTransferTest, PushRandomBlocksAndALayerRange) {
  const int64_t remote = PeerCache("8 27 0 sep " + std::string(kShape));
  auto local = MakeLocal(8, kDims, kLocalSeed);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  const auto src = RandomBlocks(30, 64, 5);
  const auto dst = RandomBlocks(30, 64, 6);
  ASSERT_EQ(dd_.PushKvBlocks(local->cache, PeerIndex(remote), src, dst), ld::LLM_SUCCESS);
  EXPECT_EQ(PeerDigest(remote, 0, 8, dst), Expected(kLocalSeed, 0, 8, 0, src));
  ld::KvCacheExtParam ext{};
  ext.src_layer_range = {0, 0};
  ext.dst_layer_range = {3, 3};
  const auto src2 = RandomBlocks(5, 64, 7);
  const auto dst2 = RandomBlocks(5, 64, 8);
  ASSERT_EQ(dd_.PushKvBlocks(local->cache, PeerIndex(remote), src2, dst2, ext), ld::LLM_SUCCESS);
  EXPECT_EQ(PeerDigest(remote, 6, 8, dst2), Expected(kLocalSeed, 6, 8, -6, src2));
}

TEST_P(KvTransferTest, WholeCachesByBatchIndex) {
  // 4 batches of 2 KiB per tensor.
  const int64_t remote = PeerCache("4 27 " + std::to_string(kPeerSeed) + " contig 4,1024");
  auto local = MakeLocal(4, {4, 1024}, 0);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  ASSERT_EQ(dd_.PullKvCache(PeerIndex(remote, 1), local->cache, 2), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 4, 2048, {2}),
            ExpectedDigest(kPeerSeed, 0, 4, 2048, {1}, [](size_t t) { return t; }, [](size_t) { return 1; }));
  // A size: the first 100 bytes of batch 3 into batch 0.
  ASSERT_EQ(dd_.PullKvCache(PeerIndex(remote, 3), local->cache, 0, 100), ld::LLM_SUCCESS);
  const auto *t1 = reinterpret_cast<const uint8_t *>(local->memory->addrs()[1]);
  for (size_t i = 0; i < 2048; ++i) {
    ASSERT_EQ(t1[i], i < 100 ? PatternByte(TensorSeed(kPeerSeed, 1), 3 * 2048 + i) : 0) << i;
  }
  // Push batch 2 of ours into the peer's batch 0.
  ASSERT_EQ(dd_.PushKvCache(local->cache, PeerIndex(remote, 0), 2), ld::LLM_SUCCESS);
  EXPECT_EQ(PeerDigest(remote, 0, 4, {0}),
            ExpectedDigest(kPeerSeed, 0, 4, 2048, {1}, [](size_t t) { return t; }, [](size_t) { return 1; }));
}

TEST_P(KvTransferTest, ContiguousBlocksAndTensorsMergeIntoFewDescriptors) {
  const int64_t remote = PeerCache("8 27 " + std::to_string(kPeerSeed) + " contig " + kShape);
  auto sep = MakeLocal(8, kDims, 0);
  auto contig = MakeLocal(8, kDims, 0, /*contiguous=*/true);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  std::vector<uint64_t> run(16);
  for (size_t i = 0; i < run.size(); ++i) run[i] = 20 + i;
  ld::KvTransferReport report;
  ld::KvCacheKey key{};
  key.cluster_id = kPeerCluster;
  key.cache_id = remote;
  ASSERT_EQ(dd_.PullKvBlocks(key, sep->cache, run, run, ld::KvCacheExtParam{}, &report), ld::LLM_SUCCESS);
  EXPECT_EQ(report.descriptors, 8u);  // one run per tensor
  EXPECT_EQ(report.bytes, 8u * 16 * kUnit);
  // Every block of tensors that lie back to back on both sides: one descriptor.
  std::vector<uint64_t> all(64);
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  ASSERT_EQ(dd_.PullKvBlocks(key, contig->cache, all, all, ld::KvCacheExtParam{}, &report), ld::LLM_SUCCESS);
  EXPECT_EQ(report.descriptors, 1u);
  EXPECT_EQ(DigestUnits(contig->memory->addrs(), 0, 8, kUnit, all), Expected(kPeerSeed, 0, 8, 0, all));
  // Listed out of order, still contiguous on both sides: merged as well.
  std::vector<uint64_t> shuffled = {3, 1, 2, 0};
  ASSERT_EQ(dd_.PullKvBlocks(key, sep->cache, shuffled, shuffled, ld::KvCacheExtParam{}, &report), ld::LLM_SUCCESS);
  EXPECT_EQ(report.descriptors, 8u);
}

TEST_P(KvTransferTest, ACacheRegisteredAfterTheLink) {
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  const int64_t remote = PeerCache("8 27 " + std::to_string(kPeerSeed) + " sep " + kShape);
  auto local = MakeLocal(8, kDims, 0);
  const auto blocks = RandomBlocks(8, 64, 9);
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, blocks, blocks), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 8, kUnit, blocks), Expected(kPeerSeed, 0, 8, 0, blocks));
}

TEST_P(KvTransferTest, ThreeHundredTensorAddresses) {
  // No cap of 240 addresses: 300 tensors, each its own mapping, both sides.
  const int64_t remote = PeerCache("300 27 " + std::to_string(kPeerSeed) + " sep 8,512");
  ASSERT_GT(remote, 0);
  auto local = MakeLocal(300, {8, 512}, 0);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  const std::vector<uint64_t> src{7, 0, 3}, dst{1, 5, 6};
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), local->cache, src, dst), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 300, 1024, dst),
            ExpectedDigest(kPeerSeed, 0, 300, 1024, src, [](size_t t) { return t; }, [&](size_t k) { return src[k]; }));
}

TEST_P(KvTransferTest, CachesFoundByBlocksKeyAndRequestKey) {
  const int64_t blocks = PeerCache("2 27 " + std::to_string(kPeerSeed) + " sep 16,512 b:7");
  const int64_t batches = PeerCache("2 27 " + std::to_string(kPeerSeed + 1) + " sep 4,512 r:42:0:3");
  ASSERT_GT(blocks, 0);
  ASSERT_GT(batches, 0);
  auto local = MakeLocal(2, {16, 512}, 0);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  ld::KvCacheKey bkey{};
  bkey.kind = ld::KvCacheKeyKind::kBlocksKey;
  bkey.cluster_id = kPeerCluster;
  bkey.model_id = 7;
  ASSERT_EQ(dd_.PullKvBlocks(bkey, local->cache, {4, 5}, {0, 1}, ld::KvCacheExtParam{}, nullptr), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 2, 1024, {0, 1}),
            ExpectedDigest(kPeerSeed, 0, 2, 1024, {4, 5}, [](size_t t) { return t; }, [](size_t k) { return 4 + k; }));
  // The batch request 42 names (3), spread over blocks 10 and 11 here.
  ld::KvCacheKey rkey{};
  rkey.kind = ld::KvCacheKeyKind::kRequestKey;
  rkey.cluster_id = kPeerCluster;
  rkey.req_id = 42;
  ASSERT_EQ(dd_.PullKvBlocks(rkey, local->cache, {}, {10, 11}, ld::KvCacheExtParam{}, nullptr), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local->memory->addrs(), 0, 2, 1024, {10}),
            ExpectedDigest(kPeerSeed + 1, 0, 2, 1024, {3}, [](size_t t) { return t; }, [](size_t) { return 3; }));
  rkey.req_id = 43;
  EXPECT_EQ(dd_.PullKvBlocks(rkey, local->cache, {}, {10, 11}, ld::KvCacheExtParam{}, nullptr),
            ld::LLM_KV_CACHE_NOT_EXIST);
}

// 2 MiB a side: over shm the peer's cache (a sealed memfd) is mapped here
// and read with memcpy (regions of 1 MiB and more are).
TEST_P(KvTransferTest, AllocatedCachesOnBothSides) {
  constexpr size_t kRow = 8192;  // BF16 elements: a block (one row) of 16 KiB
  const int64_t remote = PeerCache("4 27 " + std::to_string(kPeerSeed) + " 32," + std::to_string(kRow), "ALLOC");
  ASSERT_GT(remote, 0);
  ld::CacheDesc desc{};
  desc.placement = ld::CachePlacement::kHost;
  desc.num_tensors = 4;
  desc.data_type = ld::DT_BF16;
  desc.shape = {32, kRow};
  ld::Cache mine;
  ASSERT_EQ(dd_.AllocateCache(desc, mine), ld::LLM_SUCCESS);
  ASSERT_EQ(mine.tensor_addrs.size(), 4u);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  const auto src = RandomBlocks(12, 32, 10), dst = RandomBlocks(12, 32, 11);
  ASSERT_EQ(dd_.PullKvBlocks(PeerIndex(remote), mine, src, dst), ld::LLM_SUCCESS);
  std::vector<uint64_t> addrs(mine.tensor_addrs.begin(), mine.tensor_addrs.end());
  EXPECT_EQ(DigestUnits(addrs, 0, 4, kRow * 2, dst),
            ExpectedDigest(kPeerSeed, 0, 4, kRow * 2, src, [](size_t t) { return t; }, [&](size_t k) { return src[k]; }));
  EXPECT_EQ(dd_.DeallocateCache(mine.cache_id), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.DeallocateCache(mine.cache_id), ld::LLM_SUCCESS);  // gone already: nothing to do
  EXPECT_EQ(peer_.Command("DEALLOC " + std::to_string(remote)), "OK");
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote), mine, src, dst), ld::LLM_KV_CACHE_NOT_EXIST);
}

INSTANTIATE_TEST_SUITE_P(Loopback, KvTransferTest, KvAllNets(), KvNetName);

}  // namespace
}  // namespace hixl_test
