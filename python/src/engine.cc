// engine.cc: class hixl.Hixl, a wrapper of hixl::Hixl.
//
// Every call into the engine runs with the GIL released. Python objects the
// wrapper keeps (transfer_async user_data, buffers held by register_buffer)
// are only ever touched, and in particular released, with the GIL held.
//
// Locks, never taken while waiting for the GIL and never held while
// acquiring it:
//  - life_mu_: shared by every engine call, exclusive for finalize, so that
//    finalize (which the C++ API forbids to race other calls) waits for calls
//    in flight instead of racing them;
//  - async_mu_: guards live_ and pending_ (the user_data of requests not yet
//    reported finished), and makes "ask the engine about requests" and
//    "release the user_data of those reported finished" one step. It is not
//    held while TransferAsync runs in the engine (which may connect first,
//    for up to a second): the engine hands each request's user_data back in
//    bulk results, and that is the ObjRef itself, live from before the call.
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "hixl_py.h"

namespace hixl_py {
namespace {

using hixl::Status;

// One reference to a Python object. Destroy with the GIL held.
struct ObjRef {
  explicit ObjRef(py::object o) : obj(std::move(o)) {}
  py::object obj;
};
using ObjRefs = std::vector<std::shared_ptr<ObjRef>>;

// A buffer export kept while its memory is registered (register_buffer).
// Holding the export keeps the object alive and stops resizable objects
// (bytearray) from moving their memory. Destroy with the GIL held.
class HeldBuffer {
 public:
  HeldBuffer() = default;
  HeldBuffer(const HeldBuffer &) = delete;
  HeldBuffer &operator=(const HeldBuffer &) = delete;
  ~HeldBuffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  // Takes a writable, C-contiguous export of `obj`; raises on failure.
  void Acquire(py::handle obj) {
    GetBuffer(obj, &view_, /*writable=*/true);
    held_ = true;
  }
  uintptr_t addr() const { return reinterpret_cast<uintptr_t>(view_.buf); }
  size_t len() const { return static_cast<size_t>(view_.len); }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

class HixlPy {
 public:
  HixlPy() : engine_(new hixl::Hixl()) {}
  HixlPy(const HixlPy &) = delete;
  HixlPy &operator=(const HixlPy &) = delete;

  // Runs with the GIL held (pybind11 deallocation).
  ~HixlPy() {
    {
      py::gil_scoped_release release;
      std::unique_lock<std::shared_mutex> lock(life_mu_);
      engine_->Finalize();
    }
    // pending_ and buffers_ are destroyed after this body, GIL held.
  }

  Status Initialize(const std::string &local_engine, const std::map<std::string, std::string> &options) {
    std::map<hixl::AscendString, hixl::AscendString> opts;
    for (const auto &[k, v] : options) opts.emplace(ToAscend(k), ToAscend(v));
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    return engine_->Initialize(ToAscend(local_engine), opts);
  }

  // Called with the GIL held.
  void Finalize() {
    std::map<const ObjRef *, std::shared_ptr<ObjRef>> live;  // released below, GIL held
    {
      py::gil_scoped_release release;
      std::unique_lock<std::shared_mutex> lock(life_mu_);
      engine_->Finalize();
      // The engine is gone: no request will ever be reported again.
      std::lock_guard<std::mutex> async_lock(async_mu_);
      live.swap(live_);
      pending_.clear();
    }
    // No engine thread can touch user memory any more.
    buffers_.clear();
  }

  std::pair<Status, uintptr_t> RegisterMem(const hixl::MemDesc &mem, hixl::MemType type) {
    hixl::MemHandle handle = nullptr;
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    Status s = engine_->RegisterMem(mem, type, handle);
    return {s, reinterpret_cast<uintptr_t>(handle)};
  }

  // Called with the GIL held.
  std::pair<Status, uintptr_t> RegisterBuffer(py::handle obj, hixl::MemType type) {
    auto held = std::make_unique<HeldBuffer>();
    held->Acquire(obj);
    hixl::MemDesc mem;
    mem.addr = held->addr();
    mem.len = held->len();
    std::pair<Status, uintptr_t> r;
    {
      py::gil_scoped_release release;
      r = RegisterMem(mem, type);
    }
    if (r.first == hixl::SUCCESS) buffers_[r.second].push_back(std::move(held));
    return r;
  }

  // Called with the GIL held.
  Status DeregisterMem(uintptr_t handle) {
    Status s;
    {
      py::gil_scoped_release release;
      std::shared_lock<std::shared_mutex> lock(life_mu_);
      s = engine_->DeregisterMem(reinterpret_cast<hixl::MemHandle>(handle));
    }
    // The engine has waited for transfers using the region: buffers held for
    // it may go now.
    if (s == hixl::SUCCESS) buffers_.erase(handle);
    return s;
  }

  Status Connect(const std::string &remote, int32_t timeout_ms) {
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    return engine_->Connect(ToAscend(remote), timeout_ms);
  }
  Status Disconnect(const std::string &remote, int32_t timeout_ms) {
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    return engine_->Disconnect(ToAscend(remote), timeout_ms);
  }
  Status ConnectAsync(const std::string &remote, int32_t timeout_ms) {
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    return engine_->ConnectAsync(ToAscend(remote), timeout_ms);
  }
  Status DisconnectAsync(const std::string &remote, int32_t timeout_ms) {
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    return engine_->DisconnectAsync(ToAscend(remote), timeout_ms);
  }

  std::pair<Status, hixl::AsyncConnectStatus> GetAsyncConnectStatus(const std::string &remote) {
    hixl::AsyncConnectStatus st = hixl::AsyncConnectStatus::NOT_CONNECT;
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    Status s = engine_->GetAsyncConnectStatus(ToAscend(remote), st);
    return {s, st};
  }

  std::pair<Status, std::map<hixl::AscendString, hixl::AsyncConnectStatus>> GetAllAsyncConnectStatus() {
    std::map<hixl::AscendString, hixl::AsyncConnectStatus> all;
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    Status s = engine_->GetAsyncConnectStatus(all);
    return {s, std::move(all)};
  }

  Status TransferSync(const std::string &remote, hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &descs,
                      int32_t timeout_ms) {
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    return engine_->TransferSync(ToAscend(remote), op, descs, timeout_ms);
  }

  // Called with the GIL held.
  std::pair<Status, uintptr_t> TransferAsync(const std::string &remote, hixl::TransferOp op,
                                             const std::vector<hixl::TransferOpDesc> &descs,
                                             const PyTransferArgs &args) {
    std::shared_ptr<ObjRef> ref;  // declared first: released last, GIL held
    hixl::TransferArgs cargs;
    if (!args.user_data.is_none()) {
      ref = std::make_shared<ObjRef>(args.user_data);
      // Opaque to the engine, which hands it back in bulk results.
      cargs.user_data = ref.get();
    }
    hixl::TransferReq req = nullptr;
    Status s;
    {
      py::gil_scoped_release release;
      std::shared_lock<std::shared_mutex> lock(life_mu_);
      if (ref != nullptr) {
        // Live before the engine knows the request: a bulk query on
        // another thread may report it before this call returns.
        std::lock_guard<std::mutex> async_lock(async_mu_);
        live_[ref.get()] = ref;
      }
      s = engine_->TransferAsync(ToAscend(remote), op, descs, cargs, req);
      if (ref != nullptr) {
        std::lock_guard<std::mutex> async_lock(async_mu_);
        auto it = live_.find(ref.get());
        if (s != hixl::SUCCESS) {
          if (it != live_.end()) live_.erase(it);
        } else if (it != live_.end()) {
          pending_[req] = ref.get();  // for the single-request query
        }  // else: already reported (and released) by a bulk query
      }
      // `ref` (ours) keeps the object alive until here, so its address
      // cannot stand for another request meanwhile; dropped with the GIL.
    }
    return {s, reinterpret_cast<uintptr_t>(req)};
  }

  // Called with the GIL held.
  std::pair<Status, hixl::TransferStatus> GetTransferStatus(uintptr_t req_id) {
    std::shared_ptr<ObjRef> done;  // released last, GIL held
    auto req = reinterpret_cast<hixl::TransferReq>(req_id);
    hixl::TransferStatus st = hixl::TransferStatus::FAILED;
    Status s;
    {
      py::gil_scoped_release release;
      std::shared_lock<std::shared_mutex> lock(life_mu_);
      std::lock_guard<std::mutex> async_lock(async_mu_);
      s = engine_->GetTransferStatus(req, st);
      if (s == hixl::SUCCESS && st != hixl::TransferStatus::WAITING) TakePending(req, &done);
    }
    return {s, st};
  }

  // Called with the GIL held.
  std::pair<Status, std::vector<PyTransferResult>> GetTransferStatusBatch(const hixl::GetTransferStatusArgs &args) {
    std::vector<hixl::TransferResult> results;
    ObjRefs refs;  // one per result (or null), released last, GIL held
    Status s;
    {
      py::gil_scoped_release release;
      std::shared_lock<std::shared_mutex> lock(life_mu_);
      std::lock_guard<std::mutex> async_lock(async_mu_);
      s = engine_->GetTransferStatus(args, results);
      refs.resize(results.size());
      for (size_t i = 0; i < results.size(); ++i) {
        if (s != hixl::SUCCESS) break;
        const auto *key = static_cast<const ObjRef *>(results[i].user_data);
        auto it = key != nullptr ? live_.find(key) : live_.end();
        if (it != live_.end()) refs[i] = it->second;
        if (results[i].status != hixl::TransferStatus::WAITING) {  // reported finished: released by the engine
          if (it != live_.end()) live_.erase(it);
          pending_.erase(results[i].req);
        }
      }
    }
    std::vector<PyTransferResult> out;
    out.reserve(results.size());
    for (size_t i = 0; i < results.size(); ++i) {
      PyTransferResult r;
      r.req = reinterpret_cast<uintptr_t>(results[i].req);
      if (refs[i] != nullptr) r.user_data = refs[i]->obj;
      r.status = results[i].status;
      out.push_back(std::move(r));
    }
    return {s, std::move(out)};
  }

  Status SendNotify(const std::string &remote, const hixl::NotifyDesc &notify, int32_t timeout_ms) {
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    return engine_->SendNotify(ToAscend(remote), notify, timeout_ms);
  }

  std::pair<Status, std::vector<hixl::NotifyDesc>> GetNotifies() {
    std::vector<hixl::NotifyDesc> notifies;
    std::shared_lock<std::shared_mutex> lock(life_mu_);
    Status s = engine_->GetNotifies(notifies);
    return {s, std::move(notifies)};
  }

 private:
  // Moves the user_data reference of a finished request into *out. Caller
  // holds async_mu_.
  void TakePending(hixl::TransferReq req, std::shared_ptr<ObjRef> *out) {
    auto it = pending_.find(req);
    if (it == pending_.end()) return;
    auto live = live_.find(it->second);
    pending_.erase(it);
    if (live == live_.end()) return;
    *out = std::move(live->second);
    live_.erase(live);
  }

  std::shared_mutex life_mu_;
  std::unique_ptr<hixl::Hixl> engine_;
  std::mutex async_mu_;
  // Requests with user_data not yet reported finished: the references, by
  // address (what the engine hands back), and the address by request.
  std::map<const ObjRef *, std::shared_ptr<ObjRef>> live_;  // guarded by async_mu_
  std::map<hixl::TransferReq, const ObjRef *> pending_;    // guarded by async_mu_
  std::map<uintptr_t, std::vector<std::unique_ptr<HeldBuffer>>> buffers_;  // guarded by the GIL
};

py::dict ToDict(const std::map<hixl::AscendString, hixl::AsyncConnectStatus> &all) {
  py::dict d;
  for (const auto &[name, st] : all) d[DecodeText(name)] = py::cast(st);
  return d;
}

}  // namespace

void BindEngine(py::module_ &m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  const auto kTimeout = py::arg("timeout_in_millis") = kDefaultTimeoutMs;

  py::class_<HixlPy>(m, "Hixl",
                     "A HIXL engine (C++ hixl::Hixl). Create it, initialize() it, register memory, connect to "
                     "remote engines and move data with one-sided READ/WRITE transfers. Methods return status "
                     "codes (hixl.SUCCESS, ...), or (status, value) where the C++ call has an output. Every method "
                     "releases the GIL while the engine works. Usable as a context manager (finalize on exit).")
      .def(py::init<>())
      .def("initialize", &HixlPy::Initialize, py::arg("local_engine"),
           py::arg("options") = std::map<std::string, std::string>{}, Release(),
           "Start the engine. local_engine is 'ip:port', 'ip', '[ipv6]:port' or '[ipv6]'; with a port > 0 the "
           "engine also listens there and serves remote engines. options maps option keys (hixl.OPTION_*) to "
           "string values. A second initialize without finalize returns FAILED.")
      .def("finalize", &HixlPy::Finalize,
           "Stop the engine: fails in-flight transfers, closes links, joins threads. Idempotent. Waits for calls "
           "running in other threads to return first. Releases the buffers held by register_buffer and the "
           "user_data of unreported async requests.")
      .def("register_mem", &HixlPy::RegisterMem, py::arg("mem_desc"), py::arg("mem_type"), Release(),
           "Register a memory region; returns (status, mem_handle). Keep the memory alive and in place until "
           "deregister_mem returns (see register_buffer, which does that for you).")
      .def("register_buffer", &HixlPy::RegisterBuffer, py::arg("obj"), py::arg("mem_type") = hixl::MEM_HOST,
           "[hixl extension] Register the memory of a writable, C-contiguous buffer-protocol object (NumPy "
           "array, bytearray, memoryview...); returns (status, mem_handle). On success the binding holds a buffer "
           "export of obj until deregister_mem(mem_handle) or finalize(): obj stays alive and cannot be resized. "
           "Raises TypeError/BufferError (ValueError for some exporters) if obj is not such a buffer.")
      .def("deregister_mem", &HixlPy::DeregisterMem, py::arg("mem_handle"),
           "Deregister a region; waits for in-flight transfers that use it. 0 -> PARAM_INVALID.")
      .def("connect", &HixlPy::Connect, py::arg("remote_engine"), kTimeout, Release(),
           "Connect to a remote server engine ('ip:port'): this engine can then READ/WRITE its registered "
           "memory and send it notifies.")
      .def("disconnect", &HixlPy::Disconnect, py::arg("remote_engine"), kTimeout, Release(),
           "Close the link to a remote engine; its in-flight transfers fail.")
      .def("connect_async", &HixlPy::ConnectAsync, py::arg("remote_engine"), kTimeout, Release(),
           "Queue a connect task; follow it with get_async_connect_status.")
      .def("disconnect_async", &HixlPy::DisconnectAsync, py::arg("remote_engine"), kTimeout, Release(),
           "Queue a disconnect task; follow it with get_async_connect_status.")
      .def("get_async_connect_status", &HixlPy::GetAsyncConnectStatus, py::arg("remote_engine"), Release(),
           "(status, state of the latest connect_async/disconnect_async task for remote_engine); NOT_CONNECT for a "
           "remote never seen.")
      .def(
          "get_all_async_connect_status",
          [](HixlPy &self) {
            std::pair<Status, std::map<hixl::AscendString, hixl::AsyncConnectStatus>> r;
            {
              py::gil_scoped_release release;
              r = self.GetAllAsyncConnectStatus();
            }
            return py::make_tuple(r.first, ToDict(r.second));
          },
          "(status, {remote engine: AsyncConnectStatus}) for every remote with an async task.")
      .def("transfer_sync", &HixlPy::TransferSync, py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"),
           kTimeout, Release(),
           "Move every TransferOpDesc of op_descs (a sequence) and wait: READ copies remote -> local, WRITE "
           "local -> remote.")
      .def("transfer_async", &HixlPy::TransferAsync, py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"),
           py::arg("optional_args") = PyTransferArgs{},
           "Start a transfer; returns (status, req). Poll it with get_transfer_status(req) or the batch form. "
           "optional_args.user_data (any object) is kept alive until the request is reported finished and is "
           "returned in TransferResult.user_data. The last argument may also be passed as args= (HIXL's keyword).")
      .def("transfer_async", &HixlPy::TransferAsync, py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"),
           py::arg("args"))
      .def("get_transfer_status", &HixlPy::GetTransferStatusBatch, py::arg("args"),
           "Batch form (C++ overload GetTransferStatus(args, results)): report up to args.max_query_count "
           "requests of this engine, with their user_data. Requests reported finished are released.")
      .def("get_transfer_status", &HixlPy::GetTransferStatus, py::arg("req"),
           "Single form (C++ overload GetTransferStatus(req, status)). Once reported COMPLETED, FAILED or "
           "TIMEOUT the request is released; asking again gives PARAM_INVALID.")
      .def("get_all_transfer_status", &HixlPy::GetTransferStatusBatch,
           py::arg("args") = hixl::GetTransferStatusArgs{},
           "HIXL's name for the batch form of get_transfer_status.")
      .def("send_notify", &HixlPy::SendNotify, py::arg("remote_engine"), py::arg("notify"), kTimeout, Release(),
           "Send a NotifyDesc to a connected remote; it collects it with get_notifies.")
      .def("get_notifies", &HixlPy::GetNotifies, Release(),
           "Take every notify received so far, from every peer.")
      .def("__enter__", [](py::object self) { return self; })
      .def(
          "__exit__", [](HixlPy &self, py::args) { self.Finalize(); return false; },
          "Finalize the engine.");

  m.def(
      "get_capability",
      [](hixl::FeatureType feature) {
        int32_t value = hixl::FEATURE_NOT_SUPPORTED;
        Status s = hixl::Hixl::GetCapability(feature, value);
        return std::make_pair(s, value);
      },
      py::arg("feature_type"),
      "(status, FEATURE_SUPPORTED or FEATURE_NOT_SUPPORTED). No initialize needed. feature_type may also be an "
      "int: negative -> PARAM_INVALID, unknown -> (SUCCESS, FEATURE_NOT_SUPPORTED).");
  m.def(
      "get_capability",
      [](int32_t feature) {
        int32_t value = hixl::FEATURE_NOT_SUPPORTED;
        Status s = hixl::Hixl::GetCapability(static_cast<hixl::FeatureType>(feature), value);
        return std::make_pair(s, value);
      },
      py::arg("feature_type"));
}

}  // namespace hixl_py
