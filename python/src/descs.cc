// descs.cc: the op_descs argument of transfer_sync / transfer_async: a
// sequence of TransferOpDesc, or NumPy arrays of 8-byte integers (one N x 3
// array of local address, remote address, length; or a tuple of three
// 1-D arrays of N), read straight from their buffers: no Python object per
// descriptor.
#include <cstring>
#include <string>

#include "hixl_py.h"

namespace hixl_py {
namespace {

// A strided buffer export, released on destruction (GIL held).
class View {
 public:
  explicit View(py::handle obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_RECORDS_RO) != 0) throw py::error_already_set();
  }
  ~View() { PyBuffer_Release(&view_); }
  View(const View &) = delete;
  View &operator=(const View &) = delete;
  const Py_buffer &operator*() const { return view_; }

 private:
  Py_buffer view_{};
};

// True for 8-byte signed or unsigned integers; *is_signed says which.
bool EightByteInteger(const Py_buffer &v, bool *is_signed) {
  std::string f = v.format != nullptr ? v.format : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.erase(0, 1);
  if (v.itemsize != 8 || f.size() != 1 || std::string("qQlLnN").find(f[0]) == std::string::npos) return false;
  *is_signed = f[0] == 'q' || f[0] == 'l' || f[0] == 'n';
  return true;
}

uint64_t At(const Py_buffer &v, bool is_signed, Py_ssize_t byte_offset, const char *what) {
  const char *p = static_cast<const char *>(v.buf) + byte_offset;
  int64_t s = 0;
  std::memcpy(&s, p, 8);
  if (is_signed && s < 0) throw py::value_error(std::string("hixl: op_descs: a negative ") + what);
  return static_cast<uint64_t>(s);
}

void CheckInts(const Py_buffer &v, bool *is_signed) {
  if (!EightByteInteger(v, is_signed)) {
    throw py::type_error("hixl: op_descs arrays must hold 8-byte integers (numpy uint64 or int64), not format '" +
                         std::string(v.format != nullptr ? v.format : "B") + "'");
  }
}

std::vector<hixl::TransferOpDesc> FromMatrix(py::handle obj) {
  View view(obj);
  const Py_buffer &v = *view;
  bool is_signed = false;
  CheckInts(v, &is_signed);
  if (v.ndim != 2 || v.shape[1] != 3) {
    throw py::value_error("hixl: an op_descs array must be N x 3 (local address, remote address, length)");
  }
  std::vector<hixl::TransferOpDesc> out(static_cast<size_t>(v.shape[0]));
  for (Py_ssize_t i = 0; i < v.shape[0]; ++i) {
    const Py_ssize_t row = i * v.strides[0];
    out[i].local_addr = static_cast<uintptr_t>(At(v, is_signed, row, "local address"));
    out[i].remote_addr = static_cast<uintptr_t>(At(v, is_signed, row + v.strides[1], "remote address"));
    out[i].len = static_cast<size_t>(At(v, is_signed, row + 2 * v.strides[1], "length"));
  }
  return out;
}

std::vector<hixl::TransferOpDesc> FromColumns(const py::tuple &cols) {
  View l(cols[0]), r(cols[1]), n(cols[2]);
  bool sl = false, sr = false, sn = false;
  CheckInts(*l, &sl);
  CheckInts(*r, &sr);
  CheckInts(*n, &sn);
  if ((*l).ndim != 1 || (*r).ndim != 1 || (*n).ndim != 1 || (*l).shape[0] != (*r).shape[0] ||
      (*l).shape[0] != (*n).shape[0]) {
    throw py::value_error("hixl: op_descs as three arrays: local addresses, remote addresses and lengths, 1-D, of "
                          "one length");
  }
  std::vector<hixl::TransferOpDesc> out(static_cast<size_t>((*l).shape[0]));
  for (Py_ssize_t i = 0; i < (*l).shape[0]; ++i) {
    out[i].local_addr = static_cast<uintptr_t>(At(*l, sl, i * (*l).strides[0], "local address"));
    out[i].remote_addr = static_cast<uintptr_t>(At(*r, sr, i * (*r).strides[0], "remote address"));
    out[i].len = static_cast<size_t>(At(*n, sn, i * (*n).strides[0], "length"));
  }
  return out;
}

}  // namespace

std::vector<hixl::TransferOpDesc> DescsArg(py::handle obj) {
  if (py::isinstance<py::tuple>(obj) && py::len(obj) == 3) {
    py::tuple t = py::reinterpret_borrow<py::tuple>(obj);
    if (PyObject_CheckBuffer(t[0].ptr()) && PyObject_CheckBuffer(t[1].ptr()) && PyObject_CheckBuffer(t[2].ptr())) {
      return FromColumns(t);
    }
  }
  if (PyObject_CheckBuffer(obj.ptr())) return FromMatrix(obj);
  try {
    return obj.cast<std::vector<hixl::TransferOpDesc>>();
  } catch (const py::cast_error &) {
    throw py::type_error(std::string("hixl: op_descs must be a sequence of TransferOpDesc, an N x 3 array or three "
                                     "arrays of 8-byte integers, not ") + Py_TYPE(obj.ptr())->tp_name);
  }
}

}  // namespace hixl_py
