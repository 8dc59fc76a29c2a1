// kv_fixture.h: an LlmDataDist in the test process (cluster 2, a client by
// default) and one in a kv_test_peer process (cluster 1, a server), over
// 127.0.0.1 or ::1, with data on tcp or shm.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kv/kv_memory.h"
#include "llm_datadist/llm_datadist.h"
#include "support/peer_process.h"

namespace hixl_test {

namespace ld = llm_datadist;

constexpr uint64_t kPeerCluster = 1;
constexpr uint64_t kLocalCluster = 2;

struct KvNet {
  bool v6;
  const char *transport;  // "tcp" or "shm"
};

inline std::string KvNetName(const ::testing::TestParamInfo<KvNet> &info) {
  return std::string(info.param.v6 ? "IPv6" : "IPv4") + "_" + info.param.transport;
}
inline auto KvAllNets() { return ::testing::Values(KvNet{false, "tcp"}, KvNet{true, "tcp"}, KvNet{false, "shm"}); }

// Options for Initialize: device 0, a 20 s transfer timeout, data on `transport`.
std::map<ld::AscendString, ld::AscendString> KvOptions(const std::string &transport, const std::string &listen = "");

// A cache of this process: its memory and its registration.
struct LocalKv {
  std::unique_ptr<HostTensors> memory;
  ld::Cache cache;
  size_t unit = 0;  // bytes of a block
  size_t units = 0;
  size_t tensor_bytes = 0;
};

class KvTest : public ::testing::TestWithParam<KvNet> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Links this side to the peer (cluster kPeerCluster).
  ld::Status Link(uint64_t as_cluster = kPeerCluster, int32_t timeout_ms = 10000);
  ld::Status Unlink();
  ld::ClusterInfo PeerInfo(uint64_t as_cluster = kPeerCluster) const;

  // A cache at the peer: REG (or ALLOC) with the line's arguments; its id, or -1.
  int64_t PeerCache(const std::string &args, const char *cmd = "REG");
  uint64_t PeerDigest(int64_t id, size_t t0, size_t t1, const std::vector<uint64_t> &units);

  // A cache here of bf16 tensors of `dims` (dims[0] blocks), filled with seed
  // (0: zeros), registered with dd_; EXPECTs success.
  std::unique_ptr<LocalKv> MakeLocal(uint32_t tensors, const std::vector<int64_t> &dims, uint64_t seed,
                                     bool contiguous = false, ld::DataType dtype = ld::DT_BF16);

  std::vector<uint64_t> RandomBlocks(size_t count, size_t of, uint32_t seed) const;

  ld::CacheIndex PeerIndex(int64_t cache_id, uint32_t batch = 0) const {
    ld::CacheIndex idx{};
    idx.cluster_id = kPeerCluster;
    idx.cache_id = cache_id;
    idx.batch_index = batch;
    return idx;
  }

  ld::LlmDataDist dd_{kLocalCluster, ld::LlmRole::kDecoder};
  PeerProcess peer_;
  std::string peer_ip_;
  uint16_t peer_port_ = 0;
};

}  // namespace hixl_test
