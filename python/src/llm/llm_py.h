// llm_py.h: shared declarations of the llm_datadist._llm_datadist extension,
// the thin binding of llm_datadist::LlmDataDist that the pure-Python package
// llm_datadist (python/llm_datadist/) builds LLM-DataDist's Python API on.
//
// Everything crossing into Python is an int, a str, a list, a tuple or a
// dict; status codes come back as ints and the package raises. Every call
// into the library releases the GIL.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <tuple>

#include "llm_datadist/llm_datadist.h"

namespace llm_py {
namespace py = pybind11;
namespace ld = llm_datadist;

// A remote cache's name as the package passes it:
// (kind, cluster_id, cache_id, batch_index, model_id, req_id, prefix_id).
using KeyTuple = std::tuple<uint32_t, uint64_t, int64_t, uint32_t, uint64_t, uint64_t, uint64_t>;
ld::KvCacheKey ToKey(const KeyTuple &t);
// A layer range as (first, last), inclusive; (-1, -1): every layer.
using Range = std::pair<int32_t, int32_t>;
py::dict ReportDict(const ld::KvTransferReport &r);

void BindDataDist(py::module_ &m);
void BindCacheTask(py::module_ &m);

}  // namespace llm_py
