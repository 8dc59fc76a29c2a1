// hixl_py.h: shared declarations of the hixl._hixl extension.
//
// types.cc binds constants, enums and the plain data classes; engine.cc binds
// class Hixl; buffer.cc the buffer-protocol helpers. Everything that crosses
// into Python is an int, a str/bytes, an enum or one of the classes below: no
// raw pointer is ever exposed.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hixl/hixl.h"

namespace hixl_py {
namespace py = pybind11;

constexpr int32_t kDefaultTimeoutMs = 1000;  // the C++ API's default

// TransferArgs as Python sees it: user_data is any Python object. The
// binding keeps a reference to it from transfer_async until the request is
// reported finished, and hands it back in TransferResult.user_data.
struct PyTransferArgs {
  py::object user_data = py::int_(0);  // HIXL's default
};

// TransferResult as Python sees it: req is the int that transfer_async
// returned, user_data the object given in its TransferArgs.
struct PyTransferResult {
  uintptr_t req = 0;
  py::object user_data = py::int_(0);  // HIXL's: no user_data
  hixl::TransferStatus status = hixl::TransferStatus::WAITING;
};

// A str (UTF-8, surrogateescape), bytes or bytearray as raw bytes; TypeError
// for anything else. `what` names the argument in the message.
std::string BytesArg(py::handle h, const char *what);
// Raw bytes as str: UTF-8, undecodable bytes as lone surrogates
// (surrogateescape), so any byte string survives a round trip.
py::str DecodeText(const char *data, size_t len);
inline py::str DecodeText(const hixl::AscendString &s) { return DecodeText(s.GetString(), s.GetLength()); }
inline hixl::AscendString ToAscend(const std::string &s) { return hixl::AscendString(s.data(), s.size()); }

// A C-contiguous export of obj's buffer (writable unless writable=false) into
// *view; raises TypeError/BufferError/ValueError (a clear BufferError when
// obj is only read-only) otherwise. The caller releases it with
// PyBuffer_Release, GIL held.
void GetBuffer(py::handle obj, Py_buffer *view, bool writable);

// op_descs of transfer_sync / transfer_async: a sequence of TransferOpDesc,
// an N x 3 array of 8-byte integers (local address, remote address,
// length), or a tuple of three such 1-D arrays. Raises TypeError or
// ValueError otherwise. GIL held.
std::vector<hixl::TransferOpDesc> DescsArg(py::handle obj);

void BindTypes(py::module_ &m);
void BindEngine(py::module_ &m);
void BindBuffers(py::module_ &m);

}  // namespace hixl_py
