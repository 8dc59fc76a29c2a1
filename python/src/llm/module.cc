// module.cc: entry point of the llm_datadist._llm_datadist extension.
#include "llm_py.h"

#ifndef HIXL_VERSION_STR
#define HIXL_VERSION_STR "0.0.0"
#endif

PYBIND11_MODULE(_llm_datadist, m) {
  m.doc() =
      "The compiled half of the llm_datadist package: llm_datadist::LlmDataDist (libhixl_llm_datadist) for the "
      "pure-Python API above it. Use `import llm_datadist`; this module is internal.";
  m.attr("__version__") = HIXL_VERSION_STR;
  namespace ld = llm_datadist;
  m.attr("LLM_SUCCESS") = ld::LLM_SUCCESS;
  m.attr("LLM_FAILED") = ld::LLM_FAILED;
  m.attr("LLM_PARAM_INVALID") = ld::LLM_PARAM_INVALID;
  llm_py::BindDataDist(m);
  llm_py::BindCacheTask(m);
}
