// module.cc: entry point of the hixl._hixl extension.
#include "hixl_py.h"

#ifndef HIXL_VERSION_STR
#define HIXL_VERSION_STR "0.0.0"
#endif

PYBIND11_MODULE(_hixl, m) {
  m.doc() =
      "Python binding of the HIXL one-sided transfer API (the C++ class hixl::Hixl).\n\n"
      "Import it as `import hixl`. Methods return HIXL status codes (ints such as hixl.SUCCESS);\n"
      "where the C++ call has an output parameter they return a tuple (status, value).\n"
      "Exceptions are raised only for Python-level errors (wrong argument types, buffers\n"
      "that cannot be used). Every call into the engine releases the GIL.";
  m.attr("__version__") = HIXL_VERSION_STR;
  hixl_py::BindTypes(m);
  hixl_py::BindEngine(m);
  hixl_py::BindBuffers(m);
}
