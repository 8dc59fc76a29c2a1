// kv_unit_test.cc: the KV-cache layer's pieces on their own: the cache table
// codec (round trip, a torn image, hostile bytes), transfer plans (merging,
// groups, which blocks a failed group names), layer ranges, element sizes,
// the ready notice, the options and rank tables.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "cache_table.h"
#include "dtype_size.h"
#include "layer_range.h"
#include "options.h"
#include "rank_table.h"
#include "ready_notice.h"
#include "transfer_plan.h"

namespace llm_datadist {
namespace {

CacheTable SampleTable() {
  CacheTable t;
  t.cluster_id = 77;
  t.generation = 3;
  TableEntry a;
  a.cache_id = 1;
  a.data_type = DT_BF16;
  a.shape = {64, 8, 128};
  a.addrs = {0x1000, 0x2000};
  TableKey bk;
  bk.kind = KvCacheKeyKind::kBlocksKey;
  bk.model_id = 9;
  a.keys = {bk};
  TableEntry b;
  b.cache_id = 2;
  b.placement = 1;
  b.data_type = DT_FLOAT;
  b.shape = {4, 16};
  b.addrs = {0x9000};
  TableKey rk;
  rk.kind = KvCacheKeyKind::kRequestKey;
  rk.req_id = 42;
  rk.batch_index = 3;
  b.keys = {rk};
  t.entries = {a, b};
  return t;
}

TEST(CacheTable, RoundTripAndLookups) {
  std::vector<uint8_t> img;
  EncodeTable(SampleTable(), &img);
  CacheTable got;
  std::string why;
  ASSERT_EQ(DecodeTable(img.data(), img.size(), &got, &why), TableRead::kOk) << why;
  EXPECT_EQ(got.cluster_id, 77u);
  EXPECT_EQ(got.generation, 3u);
  ASSERT_EQ(got.entries.size(), 2u);
  EXPECT_EQ(got.entries[0].shape, (std::vector<int64_t>{64, 8, 128}));
  EXPECT_EQ(got.entries[1].addrs, (std::vector<uint64_t>{0x9000}));
  uint32_t batch = 99;
  KvCacheKey k;
  k.cache_id = 2;
  k.batch_index = 1;
  ASSERT_NE(FindEntry(got, k, &batch), nullptr);
  EXPECT_EQ(batch, 1u);
  k.kind = KvCacheKeyKind::kBlocksKey;
  k.model_id = 9;
  ASSERT_NE(FindEntry(got, k, &batch), nullptr);
  EXPECT_EQ(FindEntry(got, k, &batch)->cache_id, 1);
  k.kind = KvCacheKeyKind::kRequestKey;
  k.model_id = 0;
  k.req_id = 42;
  ASSERT_NE(FindEntry(got, k, &batch), nullptr);
  EXPECT_EQ(batch, 3u);
  k.req_id = 41;
  EXPECT_EQ(FindEntry(got, k, &batch), nullptr);
  uint64_t used = 0;
  EXPECT_EQ(PeekUsedBytes(img.data(), img.size(), &used, &why), TableRead::kOk);
  EXPECT_EQ(used, img.size());
}

TEST(CacheTable, AHalfWrittenImageIsTornNotBad) {
  std::vector<uint8_t> old_img, new_img;
  CacheTable t = SampleTable();
  EncodeTable(t, &old_img);
  t.entries[0].addrs[1] = 0x3000;
  t.generation++;
  EncodeTable(t, &new_img);
  ASSERT_EQ(old_img.size(), new_img.size());
  // The new header over the old body: what a reader may see mid-rewrite.
  std::vector<uint8_t> mixed = old_img;
  std::copy(new_img.begin(), new_img.begin() + kHeaderBytes, mixed.begin());
  CacheTable got;
  std::string why;
  EXPECT_EQ(DecodeTable(mixed.data(), mixed.size(), &got, &why), TableRead::kTorn);
}

TEST(CacheTable, HostileBytesNeverCrashOrOverreach) {
  std::vector<uint8_t> img;
  EncodeTable(SampleTable(), &img);
  std::mt19937 rng(1);
  CacheTable got;
  std::string why;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> m = img;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) m[rng() % m.size()] = static_cast<uint8_t>(rng());
    m.resize(rng() % 8 == 0 ? rng() % m.size() : m.size());
    (void)DecodeTable(m.data(), m.size(), &got, &why);  // any verdict; ASan checks the reads
  }
  // Counts that promise more than the bytes hold are refused, checksum or not.
  std::vector<uint8_t> lie = img;
  lie[48] = 0xff;
  lie[49] = 0xff;
  EXPECT_NE(DecodeTable(lie.data(), lie.size(), &got, &why), TableRead::kOk);
  std::vector<uint8_t> not_table(128, 0);
  EXPECT_EQ(DecodeTable(not_table.data(), not_table.size(), &got, &why), TableRead::kBad);
}

std::vector<PlanUnit> Blocks(const std::vector<uint64_t> &src, const std::vector<uint64_t> &dst, uint64_t unit) {
  std::vector<PlanUnit> units;
  for (size_t i = 0; i < src.size(); ++i) units.push_back({dst[i] * unit, src[i] * unit, unit});
  return units;
}

TEST(TransferPlan, RunsAndBackToBackTensorsMerge) {
  TransferPlan plan;
  // Two tensors far apart: a run of 4 contiguous blocks is one descriptor each.
  BuildPlan({{0x10000, 0x80000}, {0x50000, 0xC0000}}, Blocks({4, 5, 6, 7}, {0, 1, 2, 3}, 256), &plan);
  ASSERT_EQ(plan.descs.size(), 2u);
  EXPECT_EQ(plan.descs[0].len, 1024u);
  EXPECT_EQ(plan.descs[0].remote_addr, 0x80000u + 4 * 256);
  EXPECT_EQ(plan.bytes, 2048u);
  // Back to back on both sides (4 blocks of 256 bytes per tensor), every block: one descriptor.
  BuildPlan({{0x10000, 0x80000}, {0x10400, 0x80400}}, Blocks({0, 1, 2, 3}, {0, 1, 2, 3}, 256), &plan);
  ASSERT_EQ(plan.descs.size(), 1u);
  EXPECT_EQ(plan.descs[0].len, 2048u);
  // Listed backwards, contiguous all the same.
  BuildPlan({{0x10000, 0x80000}}, Blocks({3, 2, 1}, {7, 6, 5}, 256), &plan);
  EXPECT_EQ(plan.descs.size(), 1u);
  // Contiguous on one side only: no merge.
  BuildPlan({{0x10000, 0x80000}}, Blocks({1, 2, 3}, {5, 9, 6}, 256), &plan);
  EXPECT_EQ(plan.descs.size(), 3u);
}

TEST(TransferPlan, AFailedGroupNamesItsBlocksOnly) {
  TransferPlan plan;
  // 8 scattered blocks of 1 KiB, 2 tensors: 16 descriptors, groups of 4 KiB.
  std::vector<uint64_t> src{0, 2, 4, 6, 8, 10, 12, 14}, dst{1, 3, 5, 7, 9, 11, 13, 15};
  BuildPlan({{0x100000, 0x900000}, {0x200000, 0xA00000}}, Blocks(src, dst, 1024), &plan);
  ASSERT_EQ(plan.descs.size(), 16u);
  auto bounds = CutGroups(&plan, 4096);
  ASSERT_EQ(bounds, (std::vector<size_t>{0, 4, 8, 12, 16}));
  // Group 3 (the second tensor's last 4 blocks) failed: blocks 4..7 of the list.
  std::vector<bool> failed(8, false);
  MarkUnits(plan, 12, 16, &failed);
  EXPECT_EQ(failed, (std::vector<bool>{false, false, false, false, true, true, true, true}));
  // A descriptor larger than a group is split at blocks.
  BuildPlan({{0x100000, 0x900000}}, Blocks({0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, 1024), &plan);
  ASSERT_EQ(plan.descs.size(), 1u);
  bounds = CutGroups(&plan, 3072);
  EXPECT_EQ(plan.descs.size(), 3u);
  std::fill(failed.begin(), failed.end(), false);
  MarkUnits(plan, bounds[2], plan.descs.size(), &failed);
  EXPECT_EQ(failed, (std::vector<bool>{false, false, false, false, false, false, true, true}));
}

TEST(LayerRange, Pairs) {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  KvCacheExtParam ext{};
  ASSERT_EQ(PairTensors("t", ext, 4, 4, &pairs), LLM_SUCCESS);
  EXPECT_EQ(pairs.size(), 4u);
  EXPECT_EQ(PairTensors("t", ext, 4, 6, &pairs), LLM_PARAM_INVALID);
  ext.src_layer_range = {1, 2};
  ext.dst_layer_range = {0, 1};
  ASSERT_EQ(PairTensors("t", ext, 6, 4, &pairs), LLM_SUCCESS);
  EXPECT_EQ(pairs, (std::vector<std::pair<uint32_t, uint32_t>>{{2, 0}, {3, 1}, {4, 2}, {5, 3}}));
  ext.dst_layer_range = {-1, -1};  // the same layers
  ASSERT_EQ(PairTensors("t", ext, 6, 6, &pairs), LLM_SUCCESS);
  EXPECT_EQ(pairs.front(), (std::pair<uint32_t, uint32_t>{2, 2}));
  ext.src_layer_range = {2, 3};
  EXPECT_EQ(PairTensors("t", ext, 6, 8, &pairs), LLM_PARAM_INVALID);  // layer 3 of 3
  ext.src_layer_range = {-1, 2};
  EXPECT_EQ(CheckExtParam("t", ext, false), LLM_PARAM_INVALID);
}

TEST(DataType, SizesAndGeometry) {
  EXPECT_EQ(ElementBits(DT_BF16), 16u);
  EXPECT_EQ(ElementBits(DT_FLOAT8_E4M3FN), 8u);
  EXPECT_EQ(ElementBits(DT_FLOAT4_E2M1), 4u);
  EXPECT_EQ(ElementBits(DT_STRING), 0u);
  EXPECT_EQ(ElementBits(5), 0u);  // reserved
  TensorGeometry g;
  std::string why;
  ASSERT_TRUE(ComputeGeometry({256, 16, 8, 128}, DT_BF16, &g, &why));
  EXPECT_EQ(g.unit_bytes, 32768u);  // Llama-3.1-8B: a 16-token block of K
  EXPECT_EQ(g.tensor_bytes, 256u * 32768);
  ASSERT_TRUE(ComputeGeometry({4, 3, 2}, DT_INT4, &g, &why));
  EXPECT_EQ(g.unit_bytes, 3u);
  EXPECT_FALSE(ComputeGeometry({4, 3}, DT_INT4, &g, &why));
  EXPECT_FALSE(ComputeGeometry({1, INT64_MAX, 4}, DT_FLOAT, &g, &why));
}

TEST(ReadyNotice, RoundTripAndHostileMessages) {
  hixl::NotifyDesc n;
  ASSERT_TRUE(EncodeReadyNotice(5, "tag;with;semicolons", LLM_FAILED, {2, 3}, &n));
  KvReadyInfo info;
  ASSERT_TRUE(DecodeReadyNotice(n, &info));
  EXPECT_EQ(info.src_cluster_id, 5u);
  EXPECT_EQ(info.status, LLM_FAILED);
  EXPECT_EQ(info.failed_layers, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(info.tag, "tag;with;semicolons");
  EXPECT_FALSE(EncodeReadyNotice(5, std::string(1100, 'x'), LLM_SUCCESS, {}, &n));
  for (const char *bad : {"", "1;", "2;5;0;;t", "1;x;0;;t", "1;5;99999999999;;t", "1;5;0;1,,2;t", "1;5;0;-1;t"}) {
    hixl::NotifyDesc m{"llm_datadist.kv_ready", bad};
    EXPECT_FALSE(DecodeReadyNotice(m, &info)) << bad;
  }
  hixl::NotifyDesc other{"something.else", "1;5;0;;t"};
  EXPECT_FALSE(DecodeReadyNotice(other, &info));
}

TEST(Options, CheckedAndPassedOnToHixl) {
  DataDistOptions o;
  std::map<AscendString, AscendString> in{{OPTION_DEVICE_ID, "3"},
                                          {OPTION_SYNC_CACHE_WAIT_TIME, "2500"},
                                          {OPTION_LISTEN_IP_INFO, "::1:26000"},
                                          {OPTION_GLOBAL_RESOURCE_CONFIG, "{\"tcp.streams_per_link\": 4}"},
                                          {"llm.RdmaServiceLevel", "3"}};
  ASSERT_EQ(ParseOptions(in, &o), LLM_SUCCESS);
  EXPECT_EQ(o.device_id, 3);
  EXPECT_EQ(o.sync_timeout_ms, 2500);
  EXPECT_EQ(o.listen, "[::1]:26000");
  EXPECT_STREQ(o.hixl[hixl::OPTION_GLOBAL_RESOURCE_CONFIG].GetString(), "{\"tcp.streams_per_link\": 4}");
  EXPECT_STREQ(o.hixl[hixl::OPTION_RDMA_SERVICE_LEVEL].GetString(), "3");
  EXPECT_STREQ(o.hixl[hixl::OPTION_BUFFER_POOL].GetString(), "0:0");
  DataDistOptions bad;
  in.erase(OPTION_DEVICE_ID);
  EXPECT_EQ(ParseOptions(in, &bad), LLM_PARAM_INVALID);
  in[OPTION_DEVICE_ID] = "-1";
  EXPECT_EQ(ParseOptions(in, &bad), LLM_PARAM_INVALID);
  std::string engine;
  EXPECT_TRUE(ParseListen("[fe80::1]:1", &engine));
  EXPECT_EQ(engine, "[fe80::1]:1");
  EXPECT_FALSE(ParseListen("10.0.0.1:0", &engine));
  EXPECT_FALSE(ParseListen("10.0.0.1", &engine));
}

// LLM-DataDist's default backend takes any uint32 RDMA class (HCCL's);
// what hixl's RDMA cannot use is not passed on. Its hixl backend passes
// them on as they are, and hixl refuses them (as in LLM-DataDist).
TEST(Options, RdmaClassesAndLinkTimes) {
  std::map<AscendString, AscendString> in{{OPTION_DEVICE_ID, "0"},
                                          {"llm.RdmaServiceLevel", "100"},
                                          {"llm.RdmaTrafficClass", "300"},
                                          {"llm.LinkTotalTime", "20"},
                                          {"llm.LinkRetryCount", "80"}};
  DataDistOptions o;
  ASSERT_EQ(ParseOptions(in, &o), LLM_SUCCESS);
  EXPECT_EQ(o.hixl.count(hixl::OPTION_RDMA_SERVICE_LEVEL), 0u);
  EXPECT_EQ(o.hixl.count(hixl::OPTION_RDMA_TRAFFIC_CLASS), 0u);
  EXPECT_FALSE(o.hixl_backend);
  EXPECT_EQ(LinkTimeoutMs(o), 20000);
  in["llm.RdmaTrafficClass"] = "132";
  in["llm.RdmaServiceLevel"] = "7";
  DataDistOptions ok;
  ASSERT_EQ(ParseOptions(in, &ok), LLM_SUCCESS);
  EXPECT_STREQ(ok.hixl[hixl::OPTION_RDMA_TRAFFIC_CLASS].GetString(), "132");
  EXPECT_STREQ(ok.hixl[hixl::OPTION_RDMA_SERVICE_LEVEL].GetString(), "7");
  in["llm.RdmaServiceLevel"] = "100";
  in[OPTION_TRANSFER_BACKEND] = "hixl";
  DataDistOptions h;
  ASSERT_EQ(ParseOptions(in, &h), LLM_SUCCESS);
  EXPECT_TRUE(h.hixl_backend);
  EXPECT_STREQ(h.hixl[hixl::OPTION_RDMA_SERVICE_LEVEL].GetString(), "100");  // hixl refuses it at Initialize
  for (const auto &bad : std::vector<std::pair<const char *, const char *>>{{"llm.RdmaServiceLevel", "-1"},
                                                                           {"llm.RdmaServiceLevel", "4294967296"},
                                                                           {"llm.RdmaTrafficClass", "x"},
                                                                           {"llm.LinkRetryCount", "0"},
                                                                           {"llm.LinkRetryCount", "101"},
                                                                           {"llm.LinkTotalTime", "-1"}}) {
    auto b = in;
    b[bad.first] = bad.second;
    DataDistOptions out;
    EXPECT_EQ(ParseOptions(b, &out), LLM_PARAM_INVALID) << bad.first << "=" << bad.second;
  }
  DataDistOptions unset;
  unsetenv("HCCL_CONNECT_TIMEOUT");
  EXPECT_EQ(LinkTimeoutMs(unset), 120000);
  setenv("HCCL_CONNECT_TIMEOUT", "7", 1);
  EXPECT_EQ(LinkTimeoutMs(unset), 7000);
  unsetenv("HCCL_CONNECT_TIMEOUT");
}

TEST(RankTable, AddressesOfRanks) {
  const std::string table = R"({"server_count": "2", "status": "completed", "version": "1.2", "server_list": [
      {"server_id": "1", "host_ip": "10.10.10.0",
       "device": [{"device_id": "0", "device_ip": "192.168.1.1", "rank_id": "0"},
                  {"device_id": "1", "device_ip": "192.168.1.2", "rank_id": 2, "device_port": 26000}]},
      {"server_id": "2", "device": [{"device_id": "0", "device_ip": "fe80::2", "rank_id": "1",
                                     "device_port": "26001"}]}]})";
  std::map<uint32_t, std::string> engines;
  std::string why;
  ASSERT_TRUE(RankAddresses(table, {0, 1, 2}, &engines, &why)) << why;
  EXPECT_EQ(engines[0], "192.168.1.1:16666");  // no device_port: the default
  EXPECT_EQ(engines[1], "[fe80::2]:26001");
  EXPECT_EQ(engines[2], "192.168.1.2:26000");
  ASSERT_TRUE(RankAddresses(table, {1}, &engines, &why)) << why;
  EXPECT_EQ(engines.size(), 1u);
  EXPECT_FALSE(RankAddresses(table, {0, 3}, &engines, &why));
  EXPECT_NE(why.find("rank 3"), std::string::npos) << why;
  for (const char *bad : {"", "[]", "{}", "{\"server_list\": 1}", "{\"server_list\": [{}]}",
                          "{\"server_list\": [{\"device\": [{}]}]}", "{\"server_list\": [{\"device\": [7]}]}",
                          R"({"server_list": [{"device": [{"rank_id": "0"}]}]})",
                          R"({"server_list": [{"device": [{"rank_id": "0", "device_ip": "host0"}]}]})",
                          R"({"server_list": [{"device": [{"rank_id": "-1", "device_ip": "1.2.3.4"}]}]})",
                          R"({"server_list": [{"device": [{"rank_id": "0", "device_ip": "1.2.3.4",
                                                           "device_port": "0"}]}]})",
                          R"({"server_list": [{"device": [{"rank_id": "0", "device_ip": "1.2.3.4",
                                                           "device_port": 65536}]}]})",
                          R"({"server_list": [{"device": [{"rank_id": "0", "device_ip": "1.2.3.4"},
                                                          {"rank_id": "0", "device_ip": "1.2.3.5"}]}]})"}) {
    EXPECT_FALSE(RankAddresses(bad, {0}, &engines, &why)) << bad;
  }
}

}  // namespace
}  // namespace llm_datadist
