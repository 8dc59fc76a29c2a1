// kv_layer_push_test.cc: layer-wise pushes (TransferCacheAsync) land each
// layer as the synchronizer releases it, stop at a layer that fails to
// synchronize, and tell the receiving side with a notice that arrives after
// the data; NotifyKvReady does the same after a plain push.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kv/kv_fixture.h"

namespace hixl_test {
namespace {

constexpr uint64_t kSeed = 11;
const std::vector<int64_t> kDims{16, 4, 128};  // 1 KiB blocks
constexpr size_t kUnit = 1024;

// Layers are released by the test, one by one; `fail_at` does not synchronize.
class GateSynchronizer : public ld::LayerSynchronizer {
 public:
  explicit GateSynchronizer(int fail_at = -1) : fail_at_(fail_at) {}
  bool SynchronizeLayer(uint32_t layer, int32_t) override {
    std::unique_lock<std::mutex> lock(mu_);
    asked_ = static_cast<int>(layer);
    cv_.notify_all();
    const bool ok = cv_.wait_for(lock, std::chrono::seconds(20), [&] { return released_ >= static_cast<int>(layer); });
    return ok && static_cast<int>(layer) != fail_at_;
  }
  void Release(int layer) {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = layer;
    cv_.notify_all();
  }
  // Waits until the task asks for `layer`.
  bool WaitAsked(int layer) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return asked_ >= layer; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int released_ = -1;
  int asked_ = -1;
  const int fail_at_;
};

class KvLayerPushTest : public KvTest {
 protected:
  // The peer's notices, polled until `n` have come (bounded).
  std::vector<std::string> Notices(size_t n) {
    std::vector<std::string> all;
    for (int i = 0; i < 2000 && all.size() < n; ++i) {
      auto w = Words(peer_.Command("READY"));
      if (w.size() < 2 || w[0] != "OK") break;
      all.insert(all.end(), w.begin() + 2, w.end());
      if (all.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return all;
  }
  uint64_t Expected(size_t t0, size_t t1, const std::vector<uint64_t> &src) {
    return ExpectedDigest(kSeed, t0, t1, kUnit, src, [](size_t t) { return t; }, [&](size_t k) { return src[k]; });
  }
};

TEST_P(KvLayerPushTest, EachLayerLandsAsItIsReleasedThenTheNoticeComes) {
  const int64_t remote = PeerCache("8 27 0 sep 16,4,128 b:3");
  auto local = MakeLocal(8, kDims, kSeed);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  auto sync = std::make_shared<GateSynchronizer>();
  ld::LayerTransferConfig cfg;
  cfg.dst.kind = ld::KvCacheKeyKind::kBlocksKey;
  cfg.dst.cluster_id = kPeerCluster;
  cfg.dst.model_id = 3;
  ld::LayerPushOptions opts;
  opts.src_blocks = {1, 2, 3, 9};
  opts.dst_blocks = {4, 5, 6, 0};
  opts.ready_tag = "req-1";
  std::shared_ptr<ld::CacheTask> task;
  ASSERT_EQ(dd_.TransferCacheAsync(local->cache, sync, {cfg}, opts, task), ld::LLM_SUCCESS);
  EXPECT_EQ(task->Synchronize(10), ld::LLM_TIMEOUT);  // nothing released yet
  auto early = task->GetResults(10);
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0].status, ld::LLM_TIMEOUT);
  EXPECT_FALSE(early[0].started);
  HostTensors zeros(8, 16 * kUnit, true);
  for (int layer = 0; layer < 4; ++layer) {
    sync->Release(layer);
    // Once the task asks for the next layer, this one has landed, and no later one.
    if (layer < 3) {
      ASSERT_TRUE(sync->WaitAsked(layer + 1));
      EXPECT_EQ(PeerDigest(remote, 0, 2 * layer + 2, opts.dst_blocks), Expected(0, 2 * layer + 2, opts.src_blocks));
      EXPECT_EQ(PeerDigest(remote, 2 * layer + 2, 8, opts.dst_blocks),
                DigestUnits(zeros.addrs(), 2 * layer + 2, 8, kUnit, opts.dst_blocks));
    }
  }
  ASSERT_EQ(task->Synchronize(20000), ld::LLM_SUCCESS);
  auto results = task->GetResults();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].started);
  EXPECT_EQ(results[0].status, ld::LLM_SUCCESS);
  EXPECT_TRUE(results[0].report.failed_layers.empty());
  EXPECT_EQ(results[0].report.bytes, 8u * 4 * kUnit);
  // The notice, and by then the data.
  auto notices = Notices(1);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0], "2:0:-:req-1");
  EXPECT_EQ(PeerDigest(remote, 0, 8, opts.dst_blocks), Expected(0, 8, opts.src_blocks));
}

TEST_P(KvLayerPushTest, ALayerThatFailsToSynchronizeEndsThePush) {
  const int64_t remote = PeerCache("8 27 0 sep 16,4,128");
  auto local = MakeLocal(8, kDims, kSeed);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  auto sync = std::make_shared<GateSynchronizer>(/*fail_at=*/2);
  sync->Release(3);
  ld::LayerTransferConfig cfg;
  cfg.dst.cluster_id = kPeerCluster;
  cfg.dst.cache_id = remote;
  ld::LayerPushOptions opts;
  opts.src_blocks = {0, 1};
  opts.dst_blocks = {2, 3};
  opts.ready_tag = "req-2";
  std::shared_ptr<ld::CacheTask> task;
  ASSERT_EQ(dd_.TransferCacheAsync(local->cache, sync, {cfg}, opts, task), ld::LLM_SUCCESS);
  EXPECT_EQ(task->Synchronize(20000), ld::LLM_FAILED);
  auto results = task->GetResults();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, ld::LLM_FAILED);
  EXPECT_EQ(results[0].report.failed_layers, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(results[0].report.failed_dst_blocks, opts.dst_blocks);
  // Layers 0 and 1 landed; 2 and 3 did not move.
  EXPECT_EQ(PeerDigest(remote, 0, 4, opts.dst_blocks), Expected(0, 4, opts.src_blocks));
  HostTensors zeros(4, 16 * kUnit, true);
  EXPECT_EQ(PeerDigest(remote, 4, 8, opts.dst_blocks), DigestUnits(zeros.addrs(), 0, 4, kUnit, {2, 3}));
  auto notices = Notices(1);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0], "2:" + std::to_string(ld::LLM_FAILED) + ":2,3:req-2");
}

TEST_P(KvLayerPushTest, RawAddressesACacheBatchAndLayerRanges) {
  // TransferConfig: the peer's tensor addresses; layer 1 of ours into its layer 0, batch 2 to 0.
  const int64_t remote = PeerCache("4 27 0 sep 4,1024");
  auto w = Words(peer_.Command("ADDRS " + std::to_string(remote)));
  ASSERT_EQ(w.size(), 2u);
  const auto addrs = SplitIds(w[1]);
  auto local = MakeLocal(4, {4, 1024}, kSeed);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  auto sync = std::make_shared<GateSynchronizer>();
  sync->Release(1);
  ld::LayerTransferConfig cfg;
  cfg.dst.cluster_id = kPeerCluster;
  cfg.dst_addrs = {addrs[0], addrs[1]};
  cfg.src_layer_range = {1, 1};
  cfg.src_batch_index = 2;
  std::shared_ptr<ld::CacheTask> task;
  ASSERT_EQ(dd_.TransferCacheAsync(local->cache, sync, {cfg}, ld::LayerPushOptions{}, task), ld::LLM_SUCCESS);
  ASSERT_EQ(task->Synchronize(20000), ld::LLM_SUCCESS);
  EXPECT_EQ(PeerDigest(remote, 0, 2, {0}),
            ExpectedDigest(kSeed, 0, 2, 2048, {2}, [](size_t t) { return t + 2; }, [](size_t) { return 2; }));
  // Addresses that do not match the layers: refused at once.
  cfg.dst_addrs = {addrs[0]};
  EXPECT_EQ(dd_.TransferCacheAsync(local->cache, sync, {cfg}, ld::LayerPushOptions{}, task), ld::LLM_PARAM_INVALID);
  cfg.dst_addrs.clear();
  cfg.dst.cache_id = 999;
  EXPECT_EQ(dd_.TransferCacheAsync(local->cache, sync, {cfg}, ld::LayerPushOptions{}, task),
            ld::LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(dd_.TransferCacheAsync(local->cache, nullptr, {cfg}, ld::LayerPushOptions{}, task), ld::LLM_PARAM_INVALID);
}

TEST_P(KvLayerPushTest, NotifyKvReadyComesAfterThePushedData) {
  const int64_t remote = PeerCache("8 27 0 sep 16,4,128");
  auto local = MakeLocal(8, kDims, kSeed);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  for (int round = 0; round < 5; ++round) {
    const auto src = RandomBlocks(6, 16, 20 + round), dst = RandomBlocks(6, 16, 40 + round);
    ASSERT_EQ(dd_.PushKvBlocks(local->cache, PeerIndex(remote), src, dst), ld::LLM_SUCCESS);
    ASSERT_EQ(dd_.NotifyKvReady(kPeerCluster, ("round-" + std::to_string(round)).c_str()), ld::LLM_SUCCESS);
    auto notices = Notices(1);
    ASSERT_EQ(notices.size(), 1u);
    EXPECT_EQ(notices[0], "2:0:-:round-" + std::to_string(round));
    EXPECT_EQ(PeerDigest(remote, 0, 8, dst), Expected(0, 8, src));
  }
  EXPECT_EQ(dd_.NotifyKvReady(kPeerCluster, std::string(2000, 'x').c_str()), ld::LLM_PARAM_INVALID);
}

INSTANTIATE_TEST_SUITE_P(Loopback, KvLayerPushTest, KvAllNets(), KvNetName);

}  // namespace
}  // namespace hixl_test
