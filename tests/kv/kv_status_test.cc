// kv_status_test.cc: every call's documented status codes, and that a call
// refused moves nothing: before Initialize, before a link and after an
// unlink, wrong shapes, types, block ids and cache ids; link, unlink and
// relink; SetRole; a peer killed in the middle of a pull.
#include <signal.h>

#include <chrono>
#include <set>
#include <thread>

#include "kv/kv_fixture.h"
#include "support/free_port.h"

namespace hixl_test {
namespace {

constexpr uint64_t kSeed = 3;
const std::vector<int64_t> kDims{32, 4, 128};  // 1 KiB blocks of bf16
constexpr size_t kUnit = 1024;

class KvStatusTest : public KvTest {
 protected:
  // Registers the peer's cache (4 tensors, seeded) and a zeroed local one, linked.
  void Prepare() {
    remote_ = PeerCache("4 27 " + std::to_string(kSeed) + " sep 32,4,128");
    ASSERT_GT(remote_, 0);
    local_ = MakeLocal(4, kDims, 0);
    ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  }
  bool LocalUntouched() const {
    for (uint64_t a : local_->memory->addrs()) {
      const auto *p = reinterpret_cast<const uint8_t *>(a);
      for (size_t i = 0; i < local_->tensor_bytes; ++i) {
        if (p[i] != 0) return false;
      }
    }
    return true;
  }
  bool PeerUntouched() {
    std::vector<uint64_t> all(32);
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return PeerDigest(remote_, 0, 4, all) ==
           ExpectedDigest(kSeed, 0, 4, kUnit, all, [](size_t t) { return t; }, [](size_t k) { return k; });
  }

  int64_t remote_ = -1;
  std::unique_ptr<LocalKv> local_;
};

TEST_P(KvStatusTest, EveryCallBeforeInitializeFails) {
  ld::LlmDataDist idle(7, ld::LlmRole::kDecoder);
  std::vector<ld::Status> rets;
  ld::Cache cache;
  ld::CacheDesc desc{};
  int64_t id = -1;
  std::vector<ld::KvReadyInfo> ready;
  EXPECT_EQ(idle.LinkLlmClusters({PeerInfo()}, rets), ld::LLM_FAILED);
  EXPECT_EQ(idle.UnlinkLlmClusters({PeerInfo()}, rets), ld::LLM_FAILED);
  EXPECT_EQ(idle.SetRole(ld::LlmRole::kPrompt), ld::LLM_FAILED);
  EXPECT_EQ(idle.RegisterKvCache(desc, {1}, ld::RegisterCfg{}, id), ld::LLM_FAILED);
  EXPECT_EQ(idle.UnregisterKvCache(1), ld::LLM_FAILED);
  EXPECT_EQ(idle.AllocateCache(desc, cache), ld::LLM_FAILED);
  EXPECT_EQ(idle.DeallocateCache(1), ld::LLM_FAILED);
  EXPECT_EQ(idle.PullKvBlocks(PeerIndex(1), cache, {0}, {0}), ld::LLM_FAILED);
  EXPECT_EQ(idle.PullKvCache(PeerIndex(1), cache), ld::LLM_FAILED);
  EXPECT_EQ(idle.PushKvBlocks(cache, PeerIndex(1), {0}, {0}), ld::LLM_FAILED);
  EXPECT_EQ(idle.PushKvCache(cache, PeerIndex(1)), ld::LLM_FAILED);
  EXPECT_EQ(idle.CopyKvCache(cache, cache), ld::LLM_FAILED);
  EXPECT_EQ(idle.CopyKvBlocks(cache, cache, {0}, {{1}}), ld::LLM_FAILED);
  EXPECT_EQ(idle.GetReadyKv(ready), ld::LLM_FAILED);
  idle.Finalize();
  idle.Finalize();  // idempotent
}

TEST_P(KvStatusTest, InitializeOptions) {
  const std::string t = GetParam().transport;
  auto opts = KvOptions(t);
  ld::LlmDataDist a(7, ld::LlmRole::kPrompt);
  opts.erase(ld::OPTION_DEVICE_ID);
  EXPECT_EQ(a.Initialize(opts), ld::LLM_PARAM_INVALID);  // the device id is required
  opts = KvOptions(t, "127.0.0.1");
  EXPECT_EQ(a.Initialize(opts), ld::LLM_PARAM_INVALID);  // no port
  opts = KvOptions(t, "127.0.0.1:70000");
  EXPECT_EQ(a.Initialize(opts), ld::LLM_PARAM_INVALID);
  opts = KvOptions(t);
  opts[ld::OPTION_SYNC_CACHE_WAIT_TIME] = "0";
  EXPECT_EQ(a.Initialize(opts), ld::LLM_PARAM_INVALID);
  opts = KvOptions(t);
  opts[ld::OPTION_TRANSFER_BACKEND] = "hccl";
  EXPECT_EQ(a.Initialize(opts), ld::LLM_FEATURE_NOT_ENABLED);
  opts = KvOptions(t);
  opts[ld::OPTION_GLOBAL_RESOURCE_CONFIG] = "not json";
  EXPECT_EQ(a.Initialize(opts), ld::LLM_PARAM_INVALID);  // hixl checks what it is given
  ld::LlmDataDist bad_role(7, ld::LlmRole::kEnd);
  EXPECT_EQ(bad_role.Initialize(KvOptions(t)), ld::LLM_PARAM_INVALID);
  opts = KvOptions(t);
  opts[ld::OPTION_TRANSFER_BACKEND] = "hixl";
  opts["llm.SomethingElse"] = "ignored";
  EXPECT_EQ(a.Initialize(opts), ld::LLM_SUCCESS);
  EXPECT_EQ(a.Initialize(opts), ld::LLM_SUCCESS);  // initialized already
  // Listening on the peer's own port: the engine does not start.
  ld::LlmDataDist b(8, ld::LlmRole::kPrompt);
  EXPECT_EQ(b.Initialize(KvOptions(t, peer_.name())), ld::LLM_FAILED);
}

TEST_P(KvStatusTest, LinkUnlinkRelink) {
  remote_ = PeerCache("4 27 " + std::to_string(kSeed) + " sep 32,4,128");
  local_ = MakeLocal(4, kDims, 0);
  const std::vector<uint64_t> blocks{1, 2};
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), local_->cache, blocks, blocks), ld::LLM_NOT_YET_LINK);
  EXPECT_EQ(dd_.PushKvBlocks(local_->cache, PeerIndex(remote_), blocks, blocks), ld::LLM_NOT_YET_LINK);
  EXPECT_EQ(dd_.NotifyKvReady(kPeerCluster, "x"), ld::LLM_NOT_YET_LINK);
  EXPECT_EQ(Link(), ld::LLM_SUCCESS);
  EXPECT_EQ(Link(), ld::LLM_ALREADY_LINK);
  EXPECT_EQ(Unlink(), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), local_->cache, blocks, blocks), ld::LLM_NOT_YET_LINK);
  EXPECT_TRUE(LocalUntouched());
  EXPECT_EQ(Unlink(), ld::LLM_SUCCESS);  // not linked: nothing to do
  EXPECT_EQ(Link(), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), local_->cache, blocks, blocks), ld::LLM_SUCCESS);
  EXPECT_EQ(DigestUnits(local_->memory->addrs(), 0, 4, kUnit, blocks),
            ExpectedDigest(
                kSeed, 0, 4, kUnit, blocks, [](size_t t) { return t; }, [&](size_t k) { return blocks[k]; }));
}

TEST_P(KvStatusTest, LinkFailures) {
  std::vector<ld::Status> rets;
  // The peer is cluster 1: asking for cluster 5 there is refused.
  EXPECT_EQ(Link(5), ld::LLM_LINK_FAILED);
  EXPECT_EQ(Link(kLocalCluster), ld::LLM_PARAM_INVALID);  // this side's own id
  EXPECT_EQ(dd_.LinkLlmClusters({PeerInfo()}, rets, 0), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.LinkLlmClusters({}, rets), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.LinkLlmClusters(std::vector<ld::ClusterInfo>(17, PeerInfo()), rets),
            ld::LLM_CLUSTER_NUM_EXCEED_LIMIT);
  ld::ClusterInfo nobody = PeerInfo(9);
  nobody.remote_ip_infos[0].port = static_cast<uint16_t>(FreePort(GetParam().v6 ? AF_INET6 : AF_INET));
  ld::ClusterInfo no_ip = PeerInfo(10);
  no_ip.remote_ip_infos.clear();
  EXPECT_EQ(dd_.LinkLlmClusters({nobody, PeerInfo(), no_ip}, rets, 3000), ld::LLM_PARAM_INVALID);
  ASSERT_EQ(rets.size(), 3u);
  EXPECT_EQ(rets[0], ld::LLM_LINK_FAILED);
  EXPECT_EQ(rets[1], ld::LLM_SUCCESS);  // one cluster's failure is its own
  EXPECT_EQ(rets[2], ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.UnlinkLlmClusters({PeerInfo()}, rets, 0), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.UnlinkLlmClusters(std::vector<ld::ClusterInfo>(17, PeerInfo()), rets),
            ld::LLM_CLUSTER_NUM_EXCEED_LIMIT);
}

TEST_P(KvStatusTest, SetRole) {
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kEnd), ld::LLM_PARAM_INVALID);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kPrompt), ld::LLM_EXIST_LINK);
  ASSERT_EQ(Unlink(), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kPrompt), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.SetRole(ld::LlmRole::kDecoder, {{ld::OPTION_LISTEN_IP_INFO, "nonsense"}}), ld::LLM_PARAM_INVALID);
  // Where the listener goes: kv_role_link_test.cc.
}

TEST_P(KvStatusTest, WrongArgumentsMoveNothing) {
  Prepare();
  const int64_t narrower = PeerCache("4 27 1 sep 32,4,64");   // blocks of 512 bytes
  const int64_t wider_type = PeerCache("4 0 1 sep 32,4,128");  // float: blocks of 2 KiB
  const int64_t fewer = PeerCache("2 27 1 sep 32,4,128");     // 2 tensors
  ASSERT_GT(narrower, 0);
  const auto &c = local_->cache;
  const std::vector<uint64_t> b{1, 2};
  ld::KvCacheExtParam ext{};
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(narrower), c, b, b), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(wider_type), c, b, b), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(fewer), c, b, b), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PushKvBlocks(c, PeerIndex(narrower), b, b), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, {1, 32}, b), ld::LLM_PARAM_INVALID);  // block 32 of 32
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, b, {0, 99}), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PushKvBlocks(c, PeerIndex(remote_), {40}, {0}), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, {1, 2, 3}, b), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, {}, b), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, b, {}), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_, 1), c, b, b), ld::LLM_PARAM_INVALID);  // blocks are at batch 0
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(9999), c, b, b), ld::LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(dd_.PushKvBlocks(c, PeerIndex(9999), b, b), ld::LLM_KV_CACHE_NOT_EXIST);
  ld::Cache unknown = c;
  unknown.cache_id = 9999;
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), unknown, b, b), ld::LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(dd_.PushKvBlocks(unknown, PeerIndex(remote_), b, b), ld::LLM_KV_CACHE_NOT_EXIST);
  ld::CacheIndex own = PeerIndex(remote_);
  own.cluster_id = kLocalCluster;
  EXPECT_EQ(dd_.PullKvBlocks(own, c, b, b), ld::LLM_PARAM_INVALID);  // not from this side itself
  ext.src_layer_range = {1, 0};
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, b, b, ext), ld::LLM_PARAM_INVALID);
  ext.src_layer_range = {0, 2};  // 4 tensors are layers 0 and 1
  ext.dst_layer_range = {0, 2};
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, b, b, ext), ld::LLM_PARAM_INVALID);
  ext.src_layer_range = {0, 1};
  ext.dst_layer_range = {1, 1};  // sizes differ
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, b, b, ext), ld::LLM_PARAM_INVALID);
  ext = ld::KvCacheExtParam{};
  ext.tensor_num_per_layer = 0;
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, b, b, ext), ld::LLM_PARAM_INVALID);
  ext.tensor_num_per_layer = 3;
  ext.src_layer_range = {0, 0};  // 4 tensors are not layers of 3
  EXPECT_EQ(dd_.PullKvBlocks(PeerIndex(remote_), c, b, b, ext), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvCache(PeerIndex(remote_, 32), c), ld::LLM_PARAM_INVALID);  // batch 32 of 32
  EXPECT_EQ(dd_.PullKvCache(PeerIndex(remote_), c, 0, 0), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.PullKvCache(PeerIndex(remote_), c, 0, 4096), ld::LLM_PARAM_INVALID);  // more than a batch
  EXPECT_EQ(dd_.PushKvCache(c, PeerIndex(remote_), 0, 100), ld::LLM_PARAM_INVALID);   // push size: -1 only
  EXPECT_TRUE(LocalUntouched());
  EXPECT_TRUE(PeerUntouched());
}

TEST_P(KvStatusTest, RegistrationStatuses) {
  ld::CacheDesc desc{};
  desc.placement = ld::CachePlacement::kHost;
  desc.num_tensors = 2;
  desc.data_type = ld::DT_BF16;
  desc.shape = {4, 64};
  HostTensors mem(2, 512, false);
  int64_t id = -1;
  const ld::RegisterCfg cfg{};
  EXPECT_EQ(dd_.RegisterKvCache(desc, {}, cfg, id), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.RegisterKvCache(desc, {mem.addrs()[0]}, cfg, id), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.RegisterKvCache(desc, {mem.addrs()[0], 0}, cfg, id), ld::LLM_PARAM_INVALID);
  ld::CacheDesc bad = desc;
  bad.data_type = ld::DT_STRING;
  EXPECT_EQ(dd_.RegisterKvCache(bad, mem.addrs(), cfg, id), ld::LLM_PARAM_INVALID);
  bad = desc;
  bad.shape = {4, 0};
  EXPECT_EQ(dd_.RegisterKvCache(bad, mem.addrs(), cfg, id), ld::LLM_PARAM_INVALID);
  bad = desc;
  bad.shape = {};
  EXPECT_EQ(dd_.RegisterKvCache(bad, mem.addrs(), cfg, id), ld::LLM_PARAM_INVALID);
  bad = desc;
  bad.data_type = ld::DT_INT4;
  bad.shape = {4, 3};  // 12 bits a block: not whole bytes
  EXPECT_EQ(dd_.RegisterKvCache(bad, mem.addrs(), cfg, id), ld::LLM_PARAM_INVALID);
  bad = desc;
  bad.placement = ld::CachePlacement::kDevice;  // no accelerator here: says so
  EXPECT_EQ(dd_.RegisterKvCache(bad, mem.addrs(), cfg, id), ld::LLM_FEATURE_NOT_ENABLED);
  ld::Cache cache;
  EXPECT_EQ(dd_.AllocateCache(bad, cache), ld::LLM_FEATURE_NOT_ENABLED);
  ASSERT_EQ(dd_.RegisterKvCache(desc, mem.addrs(), cfg, id), ld::LLM_SUCCESS);
  EXPECT_GT(id, 0);
  EXPECT_EQ(dd_.DeallocateCache(id), ld::LLM_PARAM_INVALID);  // registered, not allocated
  EXPECT_EQ(dd_.UnregisterKvCache(id), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.UnregisterKvCache(id), ld::LLM_SUCCESS);  // gone already
  ASSERT_EQ(dd_.AllocateCache(desc, cache), ld::LLM_SUCCESS);
  EXPECT_EQ(dd_.UnregisterKvCache(cache.cache_id), ld::LLM_PARAM_INVALID);  // allocated, not registered
  EXPECT_EQ(dd_.DeallocateCache(cache.cache_id), ld::LLM_SUCCESS);
}

TEST_P(KvStatusTest, LocalCopies) {
  auto a = MakeLocal(2, {8, 256}, kSeed, true);
  auto b = MakeLocal(2, {8, 256}, 0);
  ASSERT_EQ(dd_.CopyKvBlocks(a->cache, b->cache, {1, 2}, {{3, 4}, {5, 6}}), ld::LLM_SUCCESS);
  const std::vector<uint64_t> src{1, 2, 1, 2};
  EXPECT_EQ(DigestUnits(b->memory->addrs(), 0, 2, 512, {3, 4, 5, 6}),
            ExpectedDigest(kSeed, 0, 2, 512, src, [](size_t t) { return t; }, [&](size_t k) { return src[k]; }));
  ASSERT_EQ(dd_.CopyKvCache(a->cache, b->cache, 7, 0, 100, 12), ld::LLM_SUCCESS);
  const auto *t0 = reinterpret_cast<const uint8_t *>(b->memory->addrs()[0]);
  for (size_t i = 0; i < 512; ++i) {
    EXPECT_EQ(t0[i], i >= 100 && i < 112 ? PatternByte(TensorSeed(kSeed, 0), 7 * 512 + i) : 0);
  }
  ASSERT_EQ(dd_.CopyKvCache(a->cache, b->cache, 6, 7), ld::LLM_SUCCESS);  // the whole batch
  EXPECT_EQ(DigestUnits(b->memory->addrs(), 0, 2, 512, {7}),
            ExpectedDigest(kSeed, 0, 2, 512, {6}, [](size_t t) { return t; }, [](size_t) { return 6; }));
  auto other = MakeLocal(2, {8, 128}, 0);
  ld::Cache unknown = a->cache;
  unknown.cache_id = 999;
  EXPECT_EQ(dd_.CopyKvBlocks(a->cache, other->cache, {1}, {{1}}), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.CopyKvBlocks(a->cache, b->cache, {1}, {{8}}), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.CopyKvBlocks(a->cache, b->cache, {1, 2}, {{1}}), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.CopyKvBlocks(unknown, b->cache, {1}, {{1}}), ld::LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(dd_.CopyKvCache(a->cache, b->cache, 8, 0), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.CopyKvCache(a->cache, b->cache, 0, 0, 500, 100), ld::LLM_PARAM_INVALID);
  EXPECT_EQ(dd_.CopyKvCache(a->cache, unknown), ld::LLM_KV_CACHE_NOT_EXIST);
}

// A peer that dies while a pull is moving: the pull ends in bounded time
// with LLM_FAILED or LLM_TIMEOUT, and names the blocks that did not land;
// every block it does not name holds the right bytes.
TEST_P(KvStatusTest, PeerKilledMidPull) {
  // 4 tensors of 512 blocks of 64 KiB: 128 MiB, moved in groups.
  remote_ = PeerCache("4 27 " + std::to_string(kSeed) + " sep 512,256,128");
  ASSERT_GT(remote_, 0);
  local_ = MakeLocal(4, {512, 256, 128}, 0);
  ASSERT_EQ(Link(), ld::LLM_SUCCESS);
  std::vector<uint64_t> blocks(512);
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = i;
  ld::KvCacheKey key{};
  key.cluster_id = kPeerCluster;
  key.cache_id = remote_;
  ld::KvTransferReport report;
  ld::Status status = ld::LLM_SUCCESS;
  auto t0 = std::chrono::steady_clock::now();
  std::thread pull(
      [&] { status = dd_.PullKvBlocks(key, local_->cache, blocks, blocks, ld::KvCacheExtParam{}, &report); });
  // Kill the peer once the first bytes have landed (or the pull ended).
  const void *first = reinterpret_cast<const void *>(local_->memory->addrs()[0]);
  for (int i = 0; i < 20000 && !AnyNonZero(first, 4); ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
  peer_.Kill(SIGKILL);
  pull.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 25.0);
  if (status == ld::LLM_SUCCESS) GTEST_SKIP() << "the pull finished before the peer died";
  EXPECT_TRUE(status == ld::LLM_FAILED || status == ld::LLM_TIMEOUT) << status;
  ASSERT_FALSE(report.failed_dst_blocks.empty());
  EXPECT_EQ(report.failed_src_blocks.size(), report.failed_dst_blocks.size());
  std::set<uint64_t> failed(report.failed_dst_blocks.begin(), report.failed_dst_blocks.end());
  std::vector<uint64_t> landed;
  for (uint64_t b : blocks) {
    if (failed.count(b) == 0) landed.push_back(b);
  }
  EXPECT_EQ(DigestUnits(local_->memory->addrs(), 0, 4, 64 << 10, landed),
            ExpectedDigest(
                kSeed, 0, 4, 64 << 10, landed, [](size_t t) { return t; }, [&](size_t k) { return landed[k]; }));
}

INSTANTIATE_TEST_SUITE_P(Loopback, KvStatusTest, KvAllNets(), KvNetName);

}  // namespace
}  // namespace hixl_test
