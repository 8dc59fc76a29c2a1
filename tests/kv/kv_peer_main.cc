// kv_test_peer: the other side of the KV-cache tests: one LlmDataDist,
// serving on a free loopback port, driven by line commands on stdin (one
// answer line each on stdout):
//
//   REG <tensors> <dtype> <seed> <sep|contig> <dims,> [b:<model> | r:<req>:<model>:<batch>]...
//                              -> OK <cache_id> | ERR <status>  (filled with seed; 0: zeros)
//   ALLOC <tensors> <dtype> <seed> <dims,>  -> OK <cache_id> | ERR <status>
//   UNREG <id> | DEALLOC <id>  -> OK | ERR <status>
//   FILL <id> <seed>           -> OK
//   DIGEST <id> <t0> <t1> <units,|->  -> OK <hash>  (kv_memory.h; "-": every unit)
//   ADDRS <id>                 -> OK <tensor addresses,>
//   LINK <cluster> <ip> <port> -> OK | ERR <status>
//   UNLINK <cluster>           -> OK | ERR <status>
//   COMMLINK <name> <cluster:rank,...> <timeout_ms> <rank table, JSON without spaces>
//                              -> OK <comm_id> | ERR <status>   (LlmDataDist::Link)
//   COMMUNLINK <comm_id>       -> OK | ERR <status>
//   PULLB <cluster> <remote cache id> <local cache id> <blocks,>
//                              -> OK | ERR <status>  (the same block ids on both sides)
//   READY                      -> OK <n> [<cluster>:<status>:<failed layers,|->:<tag>]...
//   QUIT                       -> OK, then Finalize and exit 0
//
// Usage: kv_test_peer <auto4|auto6> <cluster_id>,<tcp|shm|any>.
// Prints "READY <listen address>".
#include <sys/socket.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kv/kv_memory.h"
#include "llm_datadist/llm_datadist.h"
#include "support/free_port.h"

namespace {

using llm_datadist::Status;

void Reply(const std::string &s) { std::cout << s << std::endl; }
std::string Err(Status s) { return "ERR " + std::to_string(s); }

struct PeerCache {
  std::unique_ptr<hixl_test::HostTensors> memory;  // null for ALLOC'ed caches
  std::vector<uint64_t> addrs;
  size_t tensor_bytes = 0;
  size_t unit = 0;
  size_t units = 0;
};

std::vector<int64_t> Dims(const std::string &text) {
  std::vector<int64_t> dims;
  for (uint64_t d : hixl_test::SplitIds(text)) dims.push_back(static_cast<int64_t>(d));
  return dims;
}

// Sizes of a shape of byte-sized elements of `dtype_bytes`.
void Sizes(const std::vector<int64_t> &dims, size_t dtype_bytes, PeerCache *c) {
  c->units = dims.empty() ? 0 : static_cast<size_t>(dims[0]);
  c->unit = dtype_bytes;
  for (size_t i = 1; i < dims.size(); ++i) c->unit *= static_cast<size_t>(dims[i]);
  c->tensor_bytes = c->unit * c->units;
}

size_t DtypeBytes(int dtype) {
  switch (dtype) {
    case llm_datadist::DT_FLOAT:
    case llm_datadist::DT_INT32:
      return 4;
    case llm_datadist::DT_FLOAT16:
    case llm_datadist::DT_BF16:
      return 2;
    default:
      return 1;
  }
}

bool ParseKey(const std::string &w, llm_datadist::KvCacheKey *k) {
  if (w.rfind("b:", 0) == 0) {
    k->kind = llm_datadist::KvCacheKeyKind::kBlocksKey;
    k->model_id = std::stoull(w.substr(2));
    return true;
  }
  if (w.rfind("r:", 0) == 0) {
    std::istringstream in(w.substr(2));
    char sep = 0;
    k->kind = llm_datadist::KvCacheKeyKind::kRequestKey;
    return static_cast<bool>(in >> k->req_id >> sep >> k->model_id >> sep >> k->batch_index);
  }
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kv_test_peer <auto4|auto6> <cluster_id>,<tcp|shm|any>\n");
    return 2;
  }
  const bool v6 = std::string(argv[1]) == "auto6";
  std::string spec = argv[2];
  const uint64_t cluster = std::stoull(spec.substr(0, spec.find(',')));
  const std::string transport = spec.substr(spec.find(',') + 1);
  llm_datadist::LlmDataDist dd(cluster, llm_datadist::LlmRole::kPrompt);
  std::string name;
  Status s = llm_datadist::LLM_FAILED;
  for (int attempt = 0; attempt < 20 && s != llm_datadist::LLM_SUCCESS; ++attempt) {
    name = (v6 ? "[::1]:" : "127.0.0.1:") + std::to_string(hixl_test::FreePort(v6 ? AF_INET6 : AF_INET));
    std::map<llm_datadist::AscendString, llm_datadist::AscendString> options{
        {llm_datadist::OPTION_DEVICE_ID, "0"}, {llm_datadist::OPTION_LISTEN_IP_INFO, name.c_str()},
        {llm_datadist::OPTION_SYNC_CACHE_WAIT_TIME, "20000"}};
    if (transport != "any") {
      options[llm_datadist::OPTION_GLOBAL_RESOURCE_CONFIG] =
          ("{\"comm_resource_config.protocol_desc\": [\"" + transport + ":host\"]}").c_str();
    }
    s = dd.Initialize(options);
  }
  if (s != llm_datadist::LLM_SUCCESS) {
    Reply("FAILED " + std::to_string(s));
    return 1;
  }
  Reply("READY " + name);
  std::map<int64_t, PeerCache> caches;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "REG" || cmd == "ALLOC") {
      uint32_t tensors = 0;
      int dtype = 0;
      uint64_t seed = 0;
      std::string layout = "sep", dims;
      in >> tensors >> dtype >> seed;
      if (cmd == "REG") in >> layout;
      in >> dims;
      llm_datadist::CacheDesc desc{};
      desc.placement = llm_datadist::CachePlacement::kHost;
      desc.num_tensors = tensors;
      desc.data_type = static_cast<llm_datadist::DataType>(dtype);
      desc.shape = Dims(dims);
      std::vector<llm_datadist::KvCacheKey> keys;
      std::string w;
      while (in >> w) {
        keys.emplace_back();
        if (!ParseKey(w, &keys.back())) keys.pop_back();
      }
      PeerCache c;
      Sizes(desc.shape, DtypeBytes(dtype), &c);
      int64_t id = -1;
      if (cmd == "REG") {
        c.memory = std::make_unique<hixl_test::HostTensors>(tensors, c.tensor_bytes, layout == "contig");
        c.addrs = c.memory->addrs();
        if (seed != 0) hixl_test::FillTensors(c.addrs, c.tensor_bytes, seed);
        s = dd.RegisterKvCache(desc, c.addrs, llm_datadist::RegisterCfg{}, keys, id);
      } else {
        llm_datadist::Cache cache;
        s = dd.AllocateCache(desc, keys, cache);
        id = cache.cache_id;
        c.addrs.assign(cache.tensor_addrs.begin(), cache.tensor_addrs.end());
        if (s == llm_datadist::LLM_SUCCESS && seed != 0) hixl_test::FillTensors(c.addrs, c.tensor_bytes, seed);
      }
      if (s == llm_datadist::LLM_SUCCESS) caches[id] = std::move(c);
      Reply(s == llm_datadist::LLM_SUCCESS ? "OK " + std::to_string(id) : Err(s));
    } else if (cmd == "UNREG" || cmd == "DEALLOC") {
      int64_t id = 0;
      in >> id;
      s = cmd == "UNREG" ? dd.UnregisterKvCache(id) : dd.DeallocateCache(id);
      if (s == llm_datadist::LLM_SUCCESS) caches.erase(id);
      Reply(s == llm_datadist::LLM_SUCCESS ? "OK" : Err(s));
    } else if (cmd == "FILL") {
      int64_t id = 0;
      uint64_t seed = 0;
      in >> id >> seed;
      const PeerCache &c = caches.at(id);
      hixl_test::FillTensors(c.addrs, c.tensor_bytes, seed);
      Reply("OK");
    } else if (cmd == "DIGEST") {
      int64_t id = 0;
      size_t t0 = 0, t1 = 0;
      std::string units;
      in >> id >> t0 >> t1 >> units;
      const PeerCache &c = caches.at(id);
      std::vector<uint64_t> list = hixl_test::SplitIds(units);
      for (size_t u = 0; units == "-" && u < c.units; ++u) list.push_back(u);
      Reply("OK " + std::to_string(hixl_test::DigestUnits(c.addrs, t0, t1, c.unit, list)));
    } else if (cmd == "ADDRS") {
      int64_t id = 0;
      in >> id;
      Reply("OK " + hixl_test::JoinIds(caches.at(id).addrs));
    } else if (cmd == "LINK") {
      llm_datadist::ClusterInfo info{};
      std::string ip;
      uint16_t port = 0;
      in >> info.remote_cluster_id >> ip >> port;
      llm_datadist::IpInfo remote{};
      remote.ip = ip.c_str();
      remote.port = port;
      info.remote_ip_infos.push_back(remote);
      std::vector<Status> rets;
      s = dd.LinkLlmClusters({info}, rets, 10000);
      Reply(s == llm_datadist::LLM_SUCCESS ? "OK" : Err(s));
    } else if (cmd == "UNLINK") {
      llm_datadist::ClusterInfo info{};
      in >> info.remote_cluster_id;
      std::vector<Status> rets;
      s = dd.UnlinkLlmClusters({info}, rets, 5000);
      Reply(s == llm_datadist::LLM_SUCCESS ? "OK" : Err(s));
    } else if (cmd == "COMMLINK") {
      std::string name, members, table;
      int32_t timeout_ms = 0;
      in >> name >> members >> timeout_ms >> table;
      std::map<uint64_t, uint32_t> ranks;
      std::istringstream m(members);
      std::string pair;
      while (std::getline(m, pair, ',')) {
        ranks[std::stoull(pair.substr(0, pair.find(':')))] =
            static_cast<uint32_t>(std::stoul(pair.substr(pair.find(':') + 1)));
      }
      uint64_t comm_id = 0;
      s = dd.Link(name.c_str(), ranks, table.c_str(), comm_id, timeout_ms);
      Reply(s == llm_datadist::LLM_SUCCESS ? "OK " + std::to_string(comm_id) : Err(s));
    } else if (cmd == "COMMUNLINK") {
      uint64_t comm_id = 0;
      in >> comm_id;
      s = dd.Unlink(comm_id);
      Reply(s == llm_datadist::LLM_SUCCESS ? "OK" : Err(s));
    } else if (cmd == "PULLB") {
      llm_datadist::CacheIndex src{};
      int64_t local = 0;
      std::string blocks;
      in >> src.cluster_id >> src.cache_id >> local >> blocks;
      llm_datadist::Cache dst;
      dst.cache_id = local;
      const std::vector<uint64_t> list = hixl_test::SplitIds(blocks);
      s = dd.PullKvBlocks(src, dst, list, list);
      Reply(s == llm_datadist::LLM_SUCCESS ? "OK" : Err(s));
    } else if (cmd == "READY") {
      std::vector<llm_datadist::KvReadyInfo> ready;
      s = dd.GetReadyKv(ready);
      std::string out = "OK " + std::to_string(ready.size());
      for (const auto &r : ready) {
        std::vector<uint64_t> layers(r.failed_layers.begin(), r.failed_layers.end());
        out += " " + std::to_string(r.src_cluster_id) + ":" + std::to_string(r.status) + ":" +
               hixl_test::JoinIds(layers) + ":" + r.tag;
      }
      Reply(s == llm_datadist::LLM_SUCCESS ? out : Err(s));
    } else if (cmd == "QUIT") {
      Reply("OK");
      break;
    } else {
      Reply("ERR unknown command");
    }
  }
  dd.Finalize();
  return 0;
}
