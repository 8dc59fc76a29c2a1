// gil.h: releasing the GIL around blocking calls, for the hixl and
// llm_datadist extensions.
#pragma once

#include <Python.h>
#include <unistd.h>

namespace hixl_py {

inline bool PythonFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Releases the GIL for its lifetime, like py::gil_scoped_release, except at
// interpreter exit: CPython ends a (daemon) thread that asks for the GIL back
// while it finalizes, from inside this destructor, which C++ turns into
// std::terminate. Such a thread parks instead, as CPython 3.14 does itself:
// the process is exiting. noexcept(false) lets the thread-ending unwind pass
// should finalization begin between the check and the request.
class GilRelease {
 public:
  // Made with the GIL held: once the interpreter is finalizing, only by the
  // thread finalizing it, which may take the GIL back.
  GilRelease() : finalizer_(PythonFinalizing()), state_(PyEval_SaveThread()) {}
  GilRelease(const GilRelease &) = delete;
  GilRelease &operator=(const GilRelease &) = delete;
  ~GilRelease() noexcept(false) {
    while (!finalizer_ && PythonFinalizing()) pause();
    PyEval_RestoreThread(state_);
  }

 private:
  const bool finalizer_;
  PyThreadState *state_;
};

}  // namespace hixl_py
