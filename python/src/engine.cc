// engine.cc: class hixl.Hixl, a wrapper of hixl::Hixl.
//
// Every call into the engine runs with the GIL released (GilRelease).
// Arguments the engine reads are copied first, with the GIL held: another
// thread may change a MemDesc or NotifyDesc object meanwhile. Python objects
// the wrapper keeps (transfer_async user_data, buffers held by
// register_buffer) are only ever touched, and in particular released, with
// the GIL held; releasing one may run Python code that calls back into this
// object, so the maps holding them are consistent before that happens.
//
// Finalize, which the C++ API forbids to race other calls, goes through
// Admission: it stops admitting calls (they return FAILED at once),
// finalizes the engine (which ends the calls in flight early), and waits
// for the calls it admitted before to return; only then are held buffers
// released, since no engine thread touches them any more.
//
// async_mu_ guards live_ and pending_ (the user_data of requests not yet
// reported finished), and makes "ask the engine about requests" and
// "release the user_data of those reported finished" one step. It is not
// held while TransferAsync runs in the engine (which may connect first, for
// up to a second): the engine hands each request's user_data back in bulk
// results, and that is the ObjRef itself, live from before the call.
// Locks are never taken while waiting for the GIL nor held while acquiring it.
#include <pthread.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include "gil.h"
#include "hixl_py.h"

namespace hixl_py {
namespace {

using hixl::Status;

using Release = py::call_guard<GilRelease>;

// Engine calls in progress, counted so that finalize can wait for them (a
// reader-writer lock did this before, but let new calls in ahead of a
// waiting finalize for as long as they kept coming).
class Admission {
 public:
  // Admits a call, false while a finalize is under way; *generation (if
  // given) counts the finalizes ended before it.
  bool Enter(uint64_t *generation = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_ > 0) return false;
    ++active_;
    if (generation != nullptr) *generation = generation_;
    return true;
  }
  void Leave() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_ == 0) cv_.notify_all();
  }
  // A finalize: stops admitting calls; waits for the admitted ones to
  // return; admits again (the next generation).
  void BeginClose() {
    std::lock_guard<std::mutex> lock(mu_);
    ++closing_;
  }
  void WaitIdle() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return active_ == 0; });
  }
  void EndClose() {
    std::lock_guard<std::mutex> lock(mu_);
    --closing_;
    ++generation_;
  }
  uint64_t generation() {
    std::lock_guard<std::mutex> lock(mu_);
    return generation_;
  }
  // In the child of a fork(): the calls counted ran on threads of the
  // parent, which the child does not have (nor the finalize that may have
  // been waiting for them, and either may have held mu_).
  void ResetInChild() {
    new (&mu_) std::mutex();
    new (&cv_) std::condition_variable();
    active_ = 0;
    closing_ = 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;
  int closing_ = 0;
  uint64_t generation_ = 0;
};

// One admitted call, for the scope; false when finalize refused it.
class Call {
 public:
  explicit Call(Admission *a, uint64_t *generation = nullptr) : a_(a), in_(a->Enter(generation)) {}
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;
  ~Call() {
    if (in_) a_->Leave();
  }
  explicit operator bool() const { return in_; }

 private:
  Admission *a_;
  bool in_;
};

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

class HixlPy;

// Every HixlPy, so that the child of a fork() starts each with no call in
// progress and its locks free (ResetInChild).
std::mutex g_live_mu;
std::set<HixlPy *> *g_live = nullptr;  // under g_live_mu; never freed

class HixlPy {
 public:
  HixlPy() : engine_(new hixl::Hixl()) {
    std::lock_guard<std::mutex> lock(g_live_mu);
    if (g_live == nullptr) {
      g_live = new std::set<HixlPy *>();
      pthread_atfork([] { g_live_mu.lock(); }, [] { g_live_mu.unlock(); },
                     [] {  // the forking thread, which holds g_live_mu
                       for (HixlPy *p : *g_live) p->ResetInChild();
                       g_live_mu.unlock();
                     });
    }
    g_live->insert(this);
  }
  HixlPy(const HixlPy &) = delete;
  HixlPy &operator=(const HixlPy &) = delete;

  // Runs with the GIL held (pybind11 deallocation).
  ~HixlPy() {
    Finalize();
    std::lock_guard<std::mutex> lock(g_live_mu);
    g_live->erase(this);
  }

  Status Initialize(const std::string &local_engine, const std::map<std::string, std::string> &options) {
    std::map<hixl::AscendString, hixl::AscendString> opts;
    for (const auto &[k, v] : options) opts.emplace(ToAscend(k), ToAscend(v));
    Call call(&admission_);
    if (!call) return Refused();
    // As HIXL's module: a second initialize (no finalize between) is ignored
    // and returns SUCCESS; the C++ call itself would return FAILED.
    std::lock_guard<std::mutex> lock(init_mu_);
    if (initialized_) return hixl::SUCCESS;
    Status s = engine_->Initialize(ToAscend(local_engine), opts);
    initialized_ = s == hixl::SUCCESS;
    return s;
  }

  // Called with the GIL held.
  void Finalize() {
    std::map<const ObjRef *, std::shared_ptr<ObjRef>> live;  // released below, GIL held
    {
      GilRelease release;
      admission_.BeginClose();
      // Returns once the engine has stopped (also when another thread's
      // finalize stops it); it fails what is in flight, so the calls
      // admitted before return soon. Then nothing can report a request.
      // (In the child of a fork, the parent's engine is let go of instead,
      // and the calls its threads had in progress are not counted.)
      engine_->Finalize();
      admission_.WaitIdle();
      // An initialize admitted before may have started a new engine since.
      engine_->Finalize();
      {
        // Every call admitted before has returned: none can be initializing.
        std::lock_guard<std::mutex> init_lock(init_mu_);
        initialized_ = false;
      }
      std::lock_guard<std::mutex> async_lock(async_mu_);
      live.swap(live_);
      pending_.clear();
    }
    // No engine thread touches user memory any more. The buffers are taken
    // while calls are still refused, so that a register_buffer admitted
    // before can tell (the generation moves) that its hold is not wanted;
    // out of the map first: a release may run Python code that calls us.
    auto held = std::move(buffers_);
    buffers_.clear();
    admission_.EndClose();
    held.clear();
  }

  std::pair<Status, uintptr_t> RegisterMem(hixl::MemDesc mem, hixl::MemType type) {
    return RegisterAdmitted(mem, type, nullptr);
  }

  // Called with the GIL held.
  std::pair<Status, uintptr_t> RegisterBuffer(py::handle obj, hixl::MemType type) {
    auto held = std::make_unique<HeldBuffer>();
    held->Acquire(obj);
    hixl::MemDesc mem;
    mem.addr = held->addr();
    mem.len = held->len();
    std::pair<Status, uintptr_t> r;
    uint64_t generation = 0;
    {
      GilRelease release;
      r = RegisterAdmitted(mem, type, &generation);
    }
    // A finalize ended since the call was admitted: the registration went
    // with that engine, whose buffers were released; keep nothing. (A
    // finalize still under way releases what is stored here.)
    if (r.first == hixl::SUCCESS && generation == admission_.generation()) {
      buffers_[r.second].push_back(std::move(held));
    }
    return r;
  }

  // Called with the GIL held.
  Status DeregisterMem(uintptr_t handle) {
    Status s;
    {
      GilRelease release;
      Call call(&admission_);
      s = call ? engine_->DeregisterMem(reinterpret_cast<hixl::MemHandle>(handle)) : Refused();
    }
    // The engine has waited for transfers using the region: buffers held for
    // it may go now (taken out of the map before they are released).
    if (s == hixl::SUCCESS) buffers_.extract(handle);
    return s;
  }

  Status Connect(const std::string &remote, int32_t timeout_ms) {
    Call call(&admission_);
    return call ? engine_->Connect(ToAscend(remote), timeout_ms) : Refused();
  }
  Status Disconnect(const std::string &remote, int32_t timeout_ms) {
    Call call(&admission_);
    return call ? engine_->Disconnect(ToAscend(remote), timeout_ms) : Refused();
  }
  Status ConnectAsync(const std::string &remote, int32_t timeout_ms) {
    Call call(&admission_);
    return call ? engine_->ConnectAsync(ToAscend(remote), timeout_ms) : Refused();
  }
  Status DisconnectAsync(const std::string &remote, int32_t timeout_ms) {
    Call call(&admission_);
    return call ? engine_->DisconnectAsync(ToAscend(remote), timeout_ms) : Refused();
  }

  std::pair<Status, hixl::AsyncConnectStatus> GetAsyncConnectStatus(const std::string &remote) {
    hixl::AsyncConnectStatus st = hixl::AsyncConnectStatus::NOT_CONNECT;
    Call call(&admission_);
    Status s = call ? engine_->GetAsyncConnectStatus(ToAscend(remote), st) : Refused();
    return {s, st};
  }

  std::pair<Status, std::map<hixl::AscendString, hixl::AsyncConnectStatus>> GetAllAsyncConnectStatus() {
    std::map<hixl::AscendString, hixl::AsyncConnectStatus> all;
    Call call(&admission_);
    Status s = call ? engine_->GetAsyncConnectStatus(all) : Refused();
    return {s, std::move(all)};
  }

  Status TransferSync(const std::string &remote, hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &descs,
                      int32_t timeout_ms) {
    Call call(&admission_);
    return call ? engine_->TransferSync(ToAscend(remote), op, descs, timeout_ms) : Refused();
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
    Status s = Refused();
    {
      GilRelease release;
      Call call(&admission_);
      if (call) {
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
    Status s = Refused();
    {
      GilRelease release;
      Call call(&admission_);
      if (call) {
        std::lock_guard<std::mutex> async_lock(async_mu_);
        s = engine_->GetTransferStatus(req, st);
        if (s == hixl::SUCCESS && st != hixl::TransferStatus::WAITING) TakePending(req, &done);
      }
    }
    return {s, st};
  }

  // Called with the GIL held; `args` is our own copy.
  std::pair<Status, std::vector<PyTransferResult>> GetTransferStatusBatch(hixl::GetTransferStatusArgs args) {
    std::vector<hixl::TransferResult> results;
    ObjRefs refs;  // one per result (or null), released last, GIL held
    Status s = Refused();
    {
      GilRelease release;
      Call call(&admission_);
      if (call) {
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
    }
    std::vector<PyTransferResult> out;
    out.reserve(results.size());
    for (size_t i = 0; i < results.size() && i < refs.size(); ++i) {
      PyTransferResult r;
      r.req = reinterpret_cast<uintptr_t>(results[i].req);
      if (refs[i] != nullptr) r.user_data = refs[i]->obj;
      r.status = results[i].status;
      out.push_back(std::move(r));
    }
    return {s, std::move(out)};
  }

  // `notify` is our own copy (see the top of the file).
  Status SendNotify(const std::string &remote, hixl::NotifyDesc notify, int32_t timeout_ms) {
    Call call(&admission_);
    return call ? engine_->SendNotify(ToAscend(remote), notify, timeout_ms) : Refused();
  }

  std::pair<Status, std::vector<hixl::NotifyDesc>> GetNotifies() {
    std::vector<hixl::NotifyDesc> notifies;
    Call call(&admission_);
    Status s = call ? engine_->GetNotifies(notifies) : Refused();
    return {s, std::move(notifies)};
  }

 private:
  // What a call made while finalize runs gets: what it would get after.
  static Status Refused() { return hixl::FAILED; }

  std::pair<Status, uintptr_t> RegisterAdmitted(const hixl::MemDesc &mem, hixl::MemType type, uint64_t *generation) {
    hixl::MemHandle handle = nullptr;
    Call call(&admission_, generation);
    Status s = call ? engine_->RegisterMem(mem, type, handle) : Refused();
    return {s, reinterpret_cast<uintptr_t>(handle)};
  }

  void ResetInChild() {
    admission_.ResetInChild();
    new (&async_mu_) std::mutex();
    // The parent's engine is not the child's: its initialize is a first one.
    new (&init_mu_) std::mutex();
    initialized_ = false;
  }

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

  Admission admission_;
  std::unique_ptr<hixl::Hixl> engine_;
  std::mutex init_mu_;
  bool initialized_ = false;  // guarded by init_mu_: engine_ was initialized and not finalized since
  std::mutex async_mu_;
  // Requests with user_data not yet reported finished: the references, by
  // address (what the engine hands back), and the address by request.
  std::map<const ObjRef *, std::shared_ptr<ObjRef>> live_;  // guarded by async_mu_
  std::map<hixl::TransferReq, const ObjRef *> pending_;    // guarded by async_mu_
  std::map<uintptr_t, std::vector<std::unique_ptr<HeldBuffer>>> buffers_;  // guarded by the GIL
};

// transfer_async with op_descs in any of the forms DescsArg takes.
std::pair<Status, uintptr_t> TransferAsyncArg(HixlPy &self, const std::string &remote, hixl::TransferOp op,
                                              py::handle op_descs, const PyTransferArgs &args) {
  return self.TransferAsync(remote, op, DescsArg(op_descs), args);
}

py::dict ToDict(const std::map<hixl::AscendString, hixl::AsyncConnectStatus> &all) {
  py::dict d;
  for (const auto &[name, st] : all) d[DecodeText(name)] = py::cast(st);
  return d;
}

}  // namespace

void BindEngine(py::module_ &m) {
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
           "string values. A second initialize without finalize returns SUCCESS and changes nothing (as HIXL's "
           "module; the C++ call returns FAILED).")
      .def("finalize", &HixlPy::Finalize,
           "Stop the engine: fails in-flight transfers, closes links, joins threads. Idempotent. Calls made by other "
           "threads meanwhile return FAILED; calls in flight end early and finalize returns once they have. "
           "Releases the buffers held by register_buffer and the user_data of unreported async requests.")
      // A MemDesc or NotifyDesc argument is a reference into its Python
      // object, copied only when the call is made: with call_guard that copy
      // would run after the GIL is released, racing a thread that assigns to
      // the object (a freed name string). So these two copy it first.
      .def(
          "register_mem",
          [](HixlPy &self, const hixl::MemDesc &mem, hixl::MemType type) {
            hixl::MemDesc copy = mem;
            GilRelease release;
            return self.RegisterMem(copy, type);
          },
          py::arg("mem_desc"), py::arg("mem_type"),
           "Register a memory region; returns (status, mem_handle). Keep the memory alive and in place until "
           "deregister_mem returns (see register_buffer, which does that for you). GPU memory: "
           "MemDesc(t.data_ptr(), t.nbytes) with MEM_DEVICE.")
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
              GilRelease release;
              r = self.GetAllAsyncConnectStatus();
            }
            return py::make_tuple(r.first, ToDict(r.second));
          },
          "(status, {remote engine: AsyncConnectStatus}) for every remote with an async task.")
      .def(
          "transfer_sync",
          [](HixlPy &self, const std::string &remote, hixl::TransferOp op, py::handle op_descs, int32_t timeout_ms) {
            std::vector<hixl::TransferOpDesc> descs = DescsArg(op_descs);  // GIL held: reads Python objects
            GilRelease release;
            return self.TransferSync(remote, op, descs, timeout_ms);
          },
          py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"), kTimeout,
          "Move every descriptor of op_descs and wait: READ copies remote -> local, WRITE local -> remote. "
          "op_descs: a sequence of TransferOpDesc, or [hixl extension] NumPy arrays of uint64/int64: one N x 3 "
          "array (local address, remote address, length per row) or a tuple of three 1-D arrays, read without a "
          "Python object per descriptor.")
      .def("transfer_async", &TransferAsyncArg, py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"),
           py::arg("optional_args") = PyTransferArgs{},
           "Start a transfer; returns (status, req). Poll it with get_transfer_status(req) or the batch form. "
           "optional_args.user_data (any object) is kept alive until the request is reported finished and is "
           "returned in TransferResult.user_data. The last argument may also be passed as args= (HIXL's keyword). "
           "op_descs takes the forms transfer_sync takes.")
      .def("transfer_async", &TransferAsyncArg, py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"),
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
      .def(
          "send_notify",
          [](HixlPy &self, const std::string &remote, const hixl::NotifyDesc &notify, int32_t timeout_ms) {
            hixl::NotifyDesc copy = notify;  // see register_mem
            GilRelease release;
            return self.SendNotify(remote, std::move(copy), timeout_ms);
          },
          py::arg("remote_engine"), py::arg("notify"), kTimeout,
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
