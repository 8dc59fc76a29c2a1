// cache_task.cc: _llm_datadist.CacheTask and the synchronizer adapter.
//
// The task's thread calls the Python synchronizer with the GIL taken for
// the call only; every wait on the task releases the GIL. The adapter holds
// a reference to the Python object and lets go of it with a pending call
// (Py_AddPendingCall needs no GIL): the task's thread may end while another
// thread holds the GIL and waits for it.
#include "cache_task.h"

#include <memory>

#include "../gil.h"

namespace llm_py {
namespace {

using hixl_py::GilRelease;

int DecRef(void *obj) {
  Py_DECREF(static_cast<PyObject *>(obj));
  return 0;
}

class PySynchronizer : public ld::LayerSynchronizer {
 public:
  explicit PySynchronizer(py::object obj) : obj_(obj.release().ptr()) {}
  ~PySynchronizer() override {
    if (!hixl_py::PythonFinalizing()) Py_AddPendingCall(&DecRef, obj_);
  }
  bool SynchronizeLayer(uint32_t layer_index, int32_t timeout_in_millis) override {
    if (hixl_py::PythonFinalizing()) return false;
    py::gil_scoped_acquire gil;
    try {
      py::object timeout = timeout_in_millis < 0 ? py::none() : py::cast(timeout_in_millis);
      return py::handle(obj_).attr("synchronize_layer")(layer_index, timeout).cast<bool>();
    } catch (py::error_already_set &e) {
      // The task reports the layer as not synchronized; the reason goes to stderr.
      e.discard_as_unraisable("llm_datadist: LayerSynchronizer.synchronize_layer");
      return false;
    } catch (const py::cast_error &) {
      PyErr_SetString(PyExc_TypeError, "synchronize_layer must return a bool");
      PyErr_WriteUnraisable(obj_);
      return false;
    }
  }

 private:
  PyObject *obj_;  // a reference of our own
};

// A running task; waits release the GIL.
class PyCacheTask {
 public:
  explicit PyCacheTask(std::shared_ptr<ld::CacheTask> task) : task_(std::move(task)) {}
  ld::Status Synchronize(int32_t timeout_ms) {
    GilRelease release;
    return task_->Synchronize(timeout_ms);
  }
  // [(started, status, report dict)] per destination.
  py::list Results(int32_t timeout_ms) {
    std::vector<ld::LayerPushResult> results;
    {
      GilRelease release;
      results = task_->GetResults(timeout_ms);
    }
    py::list out;
    for (const auto &r : results) out.append(py::make_tuple(r.started, r.status, ReportDict(r.report)));
    return out;
  }

 private:
  std::shared_ptr<ld::CacheTask> task_;
};

}  // namespace

py::tuple StartLayerPush(ld::LlmDataDist &dd, int64_t src_cache, py::object synchronizer,
                         const std::vector<ConfigTuple> &configs, const std::vector<uint64_t> &src_blocks,
                         const std::vector<uint64_t> &dst_blocks, uint64_t dst_block_memory_size, uint32_t per_layer,
                         int32_t timeout_ms, const std::string &ready_tag) {
  std::vector<ld::LayerTransferConfig> cfgs;
  for (const auto &c : configs) {
    ld::LayerTransferConfig cfg;
    cfg.dst = ToKey(std::get<0>(c));
    cfg.dst_addrs = std::get<1>(c);
    cfg.src_layer_range = std::get<2>(c);
    cfg.dst_layer_range = std::get<3>(c);
    cfg.src_batch_index = std::get<4>(c);
    cfgs.push_back(std::move(cfg));
  }
  ld::LayerPushOptions opts;
  opts.src_blocks = src_blocks;
  opts.dst_blocks = dst_blocks;
  opts.dst_block_memory_size = dst_block_memory_size;
  opts.tensor_num_per_layer = static_cast<uint8_t>(per_layer > 255 ? 0 : per_layer);
  opts.timeout_in_millis = timeout_ms;
  opts.ready_tag = ready_tag;
  auto sync = std::make_shared<PySynchronizer>(std::move(synchronizer));
  ld::Cache src;
  src.cache_id = src_cache;
  std::shared_ptr<ld::CacheTask> task;
  ld::Status s;
  {
    GilRelease release;
    s = dd.TransferCacheAsync(src, sync, cfgs, opts, task);
    sync.reset();  // the task's own reference, if it started, is what is left
  }
  if (s != ld::LLM_SUCCESS) return py::make_tuple(s, py::none());
  return py::make_tuple(s, py::cast(PyCacheTask(std::move(task))));
}

void BindCacheTask(py::module_ &m) {
  py::class_<PyCacheTask>(m, "CacheTask", "A running layer-wise push (llm_datadist::CacheTask).")
      .def("synchronize", &PyCacheTask::Synchronize, py::arg("timeout_ms"),
           "Waits (timeout < 0: without limit); the first failure, LLM_SUCCESS, or LLM_TIMEOUT.")
      .def("results", &PyCacheTask::Results, py::arg("timeout_ms"),
           "Waits like synchronize; [(started, status, report dict)] per destination.");
}

}  // namespace llm_py
