// datadist.cc: _llm_datadist.DataDist, a wrapper of llm_datadist::LlmDataDist.
//
// Arguments are converted with the GIL held; each call into the library
// runs with it released (GilRelease). Destroying the wrapper finalizes the
// LlmDataDist without the GIL: a layer-wise push task it waits for may be
// calling a Python synchronizer.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../gil.h"
#include "cache_task.h"
#include "llm_py.h"

namespace llm_py {

using hixl_py::GilRelease;
using Release = py::call_guard<GilRelease>;

ld::KvCacheKey ToKey(const KeyTuple &t) {
  ld::KvCacheKey k;
  k.kind = static_cast<ld::KvCacheKeyKind>(std::get<0>(t));
  k.cluster_id = std::get<1>(t);
  k.cache_id = std::get<2>(t);
  k.batch_index = std::get<3>(t);
  k.model_id = std::get<4>(t);
  k.req_id = std::get<5>(t);
  k.prefix_id = std::get<6>(t);
  return k;
}

py::dict ReportDict(const ld::KvTransferReport &r) {
  py::dict d;
  d["bytes"] = r.bytes;
  d["descriptors"] = r.descriptors;
  d["failed_src_blocks"] = r.failed_src_blocks;
  d["failed_dst_blocks"] = r.failed_dst_blocks;
  d["failed_layers"] = r.failed_layers;
  return d;
}

namespace {

using Options = std::map<std::string, std::string>;

std::map<ld::AscendString, ld::AscendString> ToOptions(const Options &o) {
  std::map<ld::AscendString, ld::AscendString> out;
  for (const auto &kv : o) out[ld::AscendString(kv.first.data(), kv.first.size())] = kv.second.c_str();
  return out;
}

// (cluster_id, ip, port) per cluster.
std::vector<ld::ClusterInfo> ToClusters(const std::vector<std::tuple<uint64_t, std::string, uint16_t>> &in) {
  std::vector<ld::ClusterInfo> out;
  for (const auto &c : in) {
    ld::ClusterInfo info{};
    info.remote_cluster_id = std::get<0>(c);
    if (!std::get<1>(c).empty()) {
      ld::IpInfo ip{};
      ip.ip = std::get<1>(c).c_str();
      ip.port = std::get<2>(c);
      info.remote_ip_infos.push_back(ip);
    }
    out.push_back(info);
  }
  return out;
}

ld::CacheDesc ToDesc(uint32_t num_tensors, int32_t data_type, const std::vector<int64_t> &shape, uint32_t placement) {
  ld::CacheDesc d{};
  d.placement = static_cast<ld::CachePlacement>(placement);
  d.num_tensors = num_tensors;
  d.data_type = static_cast<ld::DataType>(data_type);
  d.shape = shape;
  return d;
}

ld::Cache ById(int64_t cache_id) {
  ld::Cache c;
  c.cache_id = cache_id;
  return c;
}

ld::KvCacheExtParam Ext(Range src, Range dst, uint32_t per_layer) {
  ld::KvCacheExtParam e{};
  e.src_layer_range = src;
  e.dst_layer_range = dst;
  e.tensor_num_per_layer = static_cast<uint8_t>(per_layer > 255 ? 0 : per_layer);
  return e;
}

class DataDist {
 public:
  DataDist(uint64_t cluster_id, int32_t role) : dd_(new ld::LlmDataDist(cluster_id, static_cast<ld::LlmRole>(role))) {}
  DataDist(const DataDist &) = delete;
  DataDist &operator=(const DataDist &) = delete;
  // With the GIL held (pybind11 deallocation): finalizes without it.
  ~DataDist() {
    GilRelease release;
    dd_.reset();
  }

  ld::LlmDataDist &dd() { return *dd_; }

  std::pair<ld::Status, std::vector<ld::Status>> Link(
      const std::vector<std::tuple<uint64_t, std::string, uint16_t>> &clusters, int32_t timeout_ms) {
    std::vector<ld::Status> rets;
    ld::Status s = dd_->LinkLlmClusters(ToClusters(clusters), rets, timeout_ms);
    return {s, rets};
  }
  std::pair<ld::Status, std::vector<ld::Status>> Unlink(
      const std::vector<std::tuple<uint64_t, std::string, uint16_t>> &clusters, int32_t timeout_ms, bool force) {
    std::vector<ld::Status> rets;
    ld::Status s = dd_->UnlinkLlmClusters(ToClusters(clusters), rets, timeout_ms, force);
    return {s, rets};
  }
  std::pair<ld::Status, int64_t> Register(uint32_t num_tensors, int32_t data_type, const std::vector<int64_t> &shape,
                                          uint32_t placement, const std::vector<uint64_t> &addrs,
                                          const std::vector<KeyTuple> &keys) {
    std::vector<ld::KvCacheKey> k;
    for (const auto &t : keys) k.push_back(ToKey(t));
    int64_t id = -1;
    ld::Status s =
        dd_->RegisterKvCache(ToDesc(num_tensors, data_type, shape, placement), addrs, ld::RegisterCfg{}, k, id);
    return {s, id};
  }
  std::tuple<ld::Status, int64_t, std::vector<uint64_t>> Allocate(uint32_t num_tensors, int32_t data_type,
                                                                   const std::vector<int64_t> &shape,
                                                                   uint32_t placement,
                                                                   const std::vector<KeyTuple> &keys) {
    std::vector<ld::KvCacheKey> k;
    for (const auto &t : keys) k.push_back(ToKey(t));
    ld::Cache cache;
    ld::Status s = dd_->AllocateCache(ToDesc(num_tensors, data_type, shape, placement), k, cache);
    return {s, cache.cache_id, std::vector<uint64_t>(cache.tensor_addrs.begin(), cache.tensor_addrs.end())};
  }
  // A pull (push false) or push between the local cache and `remote`: block
  // lists (blocks), or one batch item.
  std::pair<ld::Status, ld::KvTransferReport> Move(bool push, int64_t local_cache, const KeyTuple &remote,
                                                   const std::vector<uint64_t> &src_blocks,
                                                   const std::vector<uint64_t> &dst_blocks, bool blocks,
                                                   uint32_t batch_index, int64_t size, Range src_range,
                                                   Range dst_range, uint32_t per_layer) {
    ld::KvTransferReport r;
    const auto ext = Ext(src_range, dst_range, per_layer);
    const ld::KvCacheKey key = ToKey(remote);
    const ld::Cache local = ById(local_cache);
    ld::Status s;
    if (push) {
      s = blocks ? dd_->PushKvBlocks(local, key, src_blocks, dst_blocks, ext, &r)
                 : dd_->PushKvCache(local, key, batch_index, size, ext, &r);
    } else {
      s = blocks ? dd_->PullKvBlocks(key, local, src_blocks, dst_blocks, ext, &r)
                 : dd_->PullKvCache(key, local, batch_index, size, ext, &r);
    }
    return {s, r};
  }
  std::pair<ld::Status, std::vector<std::tuple<uint64_t, std::string, ld::Status, std::vector<int32_t>>>> Ready() {
    std::vector<ld::KvReadyInfo> ready;
    ld::Status s = dd_->GetReadyKv(ready);
    std::vector<std::tuple<uint64_t, std::string, ld::Status, std::vector<int32_t>>> out;
    for (const auto &r : ready) out.emplace_back(r.src_cluster_id, r.tag, r.status, r.failed_layers);
    return {s, out};
  }

 private:
  std::unique_ptr<ld::LlmDataDist> dd_;
};

// A transfer's status and its report as a dict.
template <typename F>
py::tuple WithReport(F &&call) {
  std::pair<ld::Status, ld::KvTransferReport> r;
  {
    GilRelease release;
    r = call();
  }
  return py::make_tuple(r.first, ReportDict(r.second));
}

}  // namespace

void BindDataDist(py::module_ &m) {
  py::class_<DataDist>(m, "DataDist", "llm_datadist::LlmDataDist; methods return status codes (ints).")
      .def(py::init<uint64_t, int32_t>(), py::arg("cluster_id"), py::arg("role"))
      .def(
          "initialize", [](DataDist &d, const Options &o) { return d.dd().Initialize(ToOptions(o)); },
          py::arg("options"), Release())
      .def(
          "finalize", [](DataDist &d) { d.dd().Finalize(); }, Release())
      .def(
          "set_role", [](DataDist &d, int32_t role, const Options &o) {
            return d.dd().SetRole(static_cast<ld::LlmRole>(role), ToOptions(o));
          },
          py::arg("role"), py::arg("options"), Release())
      .def("link", &DataDist::Link, py::arg("clusters"), py::arg("timeout_ms"), Release(),
           "clusters: [(cluster_id, ip, port)]; (status, [status per cluster])")
      .def("unlink", &DataDist::Unlink, py::arg("clusters"), py::arg("timeout_ms"), py::arg("force"), Release())
      .def("register", &DataDist::Register, py::arg("num_tensors"), py::arg("data_type"), py::arg("shape"),
           py::arg("placement"), py::arg("addrs"), py::arg("keys"), Release(), "(status, cache_id)")
      .def("allocate", &DataDist::Allocate, py::arg("num_tensors"), py::arg("data_type"), py::arg("shape"),
           py::arg("placement"), py::arg("keys"), Release(), "(status, cache_id, tensor addresses)")
      .def(
          "unregister", [](DataDist &d, int64_t id) { return d.dd().UnregisterKvCache(id); }, py::arg("cache_id"),
          Release())
      .def(
          "deallocate", [](DataDist &d, int64_t id) { return d.dd().DeallocateCache(id); }, py::arg("cache_id"),
          Release())
      .def(
          "pull",
          [](DataDist &d, const KeyTuple &src, int64_t dst_cache, const std::vector<uint64_t> &src_blocks,
             const std::vector<uint64_t> &dst_blocks, bool blocks, uint32_t batch_index, int64_t size, Range sr,
             Range dr, uint32_t per_layer) {
            return WithReport([&] {
              return d.Move(false, dst_cache, src, src_blocks, dst_blocks, blocks, batch_index, size, sr, dr,
                            per_layer);
            });
          },
          py::arg("src"), py::arg("dst_cache_id"), py::arg("src_blocks"), py::arg("dst_blocks"), py::arg("blocks"),
          py::arg("batch_index"), py::arg("size"), py::arg("src_layer_range"), py::arg("dst_layer_range"),
          py::arg("tensor_num_per_layer"), "(status, report dict)")
      .def(
          "push",
          [](DataDist &d, int64_t src_cache, const KeyTuple &dst, const std::vector<uint64_t> &src_blocks,
             const std::vector<uint64_t> &dst_blocks, bool blocks, uint32_t src_batch, int64_t size, Range sr,
             Range dr, uint32_t per_layer) {
            return WithReport([&] {
              return d.Move(true, src_cache, dst, src_blocks, dst_blocks, blocks, src_batch, size, sr, dr, per_layer);
            });
          },
          py::arg("src_cache_id"), py::arg("dst"), py::arg("src_blocks"), py::arg("dst_blocks"), py::arg("blocks"),
          py::arg("src_batch_index"), py::arg("size"), py::arg("src_layer_range"), py::arg("dst_layer_range"),
          py::arg("tensor_num_per_layer"), "(status, report dict)")
      .def(
          "copy_cache",
          [](DataDist &d, int64_t src, int64_t dst, uint32_t sb, uint32_t db, uint64_t offset, int64_t size) {
            return d.dd().CopyKvCache(ById(src), ById(dst), sb, db, offset, size);
          },
          py::arg("src_cache_id"), py::arg("dst_cache_id"), py::arg("src_batch_index"), py::arg("dst_batch_index"),
          py::arg("offset"), py::arg("size"), Release())
      .def(
          "copy_blocks",
          [](DataDist &d, int64_t src, int64_t dst, const std::vector<uint64_t> &src_blocks,
             const std::vector<std::vector<uint64_t>> &dst_lists) {
            return d.dd().CopyKvBlocks(ById(src), ById(dst), src_blocks, dst_lists);
          },
          py::arg("src_cache_id"), py::arg("dst_cache_id"), py::arg("src_blocks"), py::arg("dst_blocks_list"),
          Release())
      .def(
          "notify_ready",
          [](DataDist &d, uint64_t cluster, const std::string &tag, ld::Status status, int32_t timeout_ms) {
            return d.dd().NotifyKvReady(cluster, ld::AscendString(tag.data(), tag.size()), status, timeout_ms);
          },
          py::arg("cluster_id"), py::arg("tag"), py::arg("status"), py::arg("timeout_ms"), Release())
      .def("get_ready", &DataDist::Ready, Release(), "(status, [(src_cluster_id, tag, status, failed_layers)])")
      .def(
          "link_comm",
          [](DataDist &d, const std::string &name, const std::map<uint64_t, uint32_t> &ranks,
             const std::string &rank_table, int32_t timeout_ms) {
            uint64_t comm_id = 0;
            ld::Status s = d.dd().Link(ld::AscendString(name.data(), name.size()), ranks,
                                       ld::AscendString(rank_table.data(), rank_table.size()), comm_id, timeout_ms);
            return std::make_pair(s, comm_id);
          },
          py::arg("comm_name"), py::arg("cluster_rank_info"), py::arg("rank_table"), py::arg("timeout_ms"), Release(),
          "LlmDataDist::Link: (status, comm_id)")
      .def(
          "unlink_comm", [](DataDist &d, uint64_t comm_id) { return d.dd().Unlink(comm_id); }, py::arg("comm_id"),
          Release())
      .def(
          "query_register_mem_status",
          [](DataDist &d, uint64_t comm_id) {
            ld::RegisterMemStatus st = ld::RegisterMemStatus::kFailed;
            ld::Status s = d.dd().QueryRegisterMemStatus(comm_id, st);
            return std::make_pair(s, static_cast<int32_t>(st));
          },
          py::arg("comm_id"), Release(), "(status, RegisterMemStatus value)")
      .def(
          "remove_cache_key", [](DataDist &d, const KeyTuple &key) { return d.dd().RemoveKvCacheKey(ToKey(key)); },
          py::arg("key"), Release())
      .def(
          "transfer_cache_async",
          [](DataDist &d, int64_t src_cache, py::object synchronizer, const std::vector<ConfigTuple> &configs,
             const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
             uint64_t dst_block_memory_size, uint32_t per_layer, int32_t timeout_ms, const std::string &ready_tag) {
            return StartLayerPush(d.dd(), src_cache, std::move(synchronizer), configs, src_blocks, dst_blocks,
                                  dst_block_memory_size, per_layer, timeout_ms, ready_tag);
          },
          py::arg("src_cache_id"), py::arg("synchronizer"), py::arg("configs"), py::arg("src_blocks"),
          py::arg("dst_blocks"), py::arg("dst_block_memory_size"), py::arg("tensor_num_per_layer"),
          py::arg("timeout_ms"), py::arg("ready_tag"),
          "configs: [(key tuple, dst_addrs, src_layer_range, dst_layer_range, src_batch_index)]; (status, CacheTask "
          "or None)");
}

}  // namespace llm_py
