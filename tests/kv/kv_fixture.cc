#include "kv/kv_fixture.h"

#include <algorithm>
#include <numeric>

namespace hixl_test {

std::map<ld::AscendString, ld::AscendString> KvOptions(const std::string &transport, const std::string &listen) {
  std::map<ld::AscendString, ld::AscendString> o{
      {ld::OPTION_DEVICE_ID, "0"},
      {ld::OPTION_SYNC_CACHE_WAIT_TIME, "20000"},
      {ld::OPTION_GLOBAL_RESOURCE_CONFIG,
       ("{\"comm_resource_config.protocol_desc\": [\"" + transport + ":host\"]}").c_str()}};
  if (!listen.empty()) o[ld::OPTION_LISTEN_IP_INFO] = listen.c_str();
  return o;
}

void KvTest::SetUp() {
  ASSERT_TRUE(peer_.Start(GetParam().v6, std::to_string(kPeerCluster) + "," + GetParam().transport));
  const std::string &name = peer_.name();
  const size_t colon = name.rfind(':');
  peer_ip_ = name.substr(0, colon);
  if (peer_ip_.front() == '[') peer_ip_ = peer_ip_.substr(1, peer_ip_.size() - 2);
  peer_port_ = static_cast<uint16_t>(std::stoi(name.substr(colon + 1)));
  ASSERT_EQ(dd_.Initialize(KvOptions(GetParam().transport)), ld::LLM_SUCCESS);
}

void KvTest::TearDown() {
  dd_.Finalize();
  peer_.Stop();
}

ld::ClusterInfo KvTest::PeerInfo(uint64_t as_cluster) const {
  ld::ClusterInfo info{};
  info.remote_cluster_id = as_cluster;
  ld::IpInfo ip{};
  ip.ip = peer_ip_.c_str();
  ip.port = peer_port_;
  info.remote_ip_infos.push_back(ip);
  return info;
}

ld::Status KvTest::Link(uint64_t as_cluster, int32_t timeout_ms) {
  std::vector<ld::Status> rets;
  ld::Status s = dd_.LinkLlmClusters({PeerInfo(as_cluster)}, rets, timeout_ms);
  EXPECT_EQ(rets.size(), 1u);
  if (!rets.empty()) {
    EXPECT_EQ(rets[0], s);
  }
  return s;
}

ld::Status KvTest::Unlink() {
  std::vector<ld::Status> rets;
  return dd_.UnlinkLlmClusters({PeerInfo()}, rets, 5000);
}

int64_t KvTest::PeerCache(const std::string &args, const char *cmd) {
  auto w = Words(peer_.Command(std::string(cmd) + " " + args));
  return w.size() == 2 && w[0] == "OK" ? std::stoll(w[1]) : -1;
}

uint64_t KvTest::PeerDigest(int64_t id, size_t t0, size_t t1, const std::vector<uint64_t> &units) {
  auto w = Words(peer_.Command("DIGEST " + std::to_string(id) + " " + std::to_string(t0) + " " +
                               std::to_string(t1) + " " + JoinIds(units)));
  return w.size() == 2 && w[0] == "OK" ? std::stoull(w[1]) : 0;
}

std::unique_ptr<LocalKv> KvTest::MakeLocal(uint32_t tensors, const std::vector<int64_t> &dims, uint64_t seed,
                                           bool contiguous, ld::DataType dtype) {
  auto kv = std::make_unique<LocalKv>();
  kv->units = static_cast<size_t>(dims[0]);
  kv->unit = dtype == ld::DT_FLOAT ? 4 : 2;
  for (size_t i = 1; i < dims.size(); ++i) kv->unit *= static_cast<size_t>(dims[i]);
  kv->tensor_bytes = kv->unit * kv->units;
  kv->memory = std::make_unique<HostTensors>(tensors, kv->tensor_bytes, contiguous);
  EXPECT_TRUE(kv->memory->ok(tensors));
  if (seed != 0) FillTensors(kv->memory->addrs(), kv->tensor_bytes, seed);
  ld::CacheDesc desc{};
  desc.placement = ld::CachePlacement::kHost;
  desc.num_tensors = tensors;
  desc.data_type = dtype;
  desc.shape = dims;
  kv->cache.cache_desc = desc;
  kv->cache.tensor_addrs.assign(kv->memory->addrs().begin(), kv->memory->addrs().end());
  EXPECT_EQ(dd_.RegisterKvCache(desc, kv->memory->addrs(), ld::RegisterCfg{}, kv->cache.cache_id), ld::LLM_SUCCESS);
  return kv;
}

std::vector<uint64_t> KvTest::RandomBlocks(size_t count, size_t of, uint32_t seed) const {
  std::vector<uint64_t> all(of);
  std::iota(all.begin(), all.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(count);
  return all;
}

}  // namespace hixl_test
