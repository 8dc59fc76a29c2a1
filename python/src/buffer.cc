// buffer.cc: helpers that turn buffer-protocol objects (NumPy arrays,
// bytearray, memoryview, mmap...) into addresses, MemDesc and TransferOpDesc,
// so that Python code never computes pointers by hand.
#include <limits>
#include <optional>
#include <string>

#include "hixl_py.h"

namespace hixl_py {

void GetBuffer(py::handle obj, Py_buffer *view, bool writable) {
  int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), view, flags) == 0) return;
  py::error_already_set original;  // (taken: the indicator is clear now)
  // A CUDA tensor (or any __cuda_array_interface__ exporter) has no buffer
  // protocol: its memory is on the GPU. Say what to do instead. (Asked only
  // on failure: the attribute lookup is not free.)
  if (PyObject_HasAttrString(obj.ptr(), "__cuda_array_interface__") != 0) {
    throw py::type_error(std::string("hixl: ") + Py_TYPE(obj.ptr())->tp_name +
                         " object is GPU (CUDA) memory, which the buffer helpers do not take (they read host "
                         "memory): register it with register_mem(MemDesc(t.data_ptr(), t.nbytes), MEM_DEVICE) "
                         "and keep it alive until deregister_mem returns; descriptors take its addresses as "
                         "integers");
  }
  PyErr_Clear();
  if (!writable) throw std::move(original);
  // Say why when the object is merely read-only (exporters differ in what
  // they raise: BufferError, ValueError...).
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    throw std::move(original);
  }
  PyBuffer_Release(view);
  throw py::buffer_error(std::string("hixl: ") + Py_TYPE(obj.ptr())->tp_name +
                         " object is read-only; memory that a transfer may write (a registered region, the "
                         "destination of a READ) must be writable. Pass writable=False only for memory that "
                         "is never written.");
}

namespace {

struct Span {
  uintptr_t addr;
  size_t len;
};

// Address and length of obj's memory. The export is released at once: the
// caller must keep obj alive (and not resize it) while the address is used.
Span BufferSpan(py::handle obj, bool writable) {
  Py_buffer view;
  GetBuffer(obj, &view, writable);
  Span s{reinterpret_cast<uintptr_t>(view.buf), static_cast<size_t>(view.len)};
  PyBuffer_Release(&view);
  return s;
}

}  // namespace

void BindBuffers(py::module_ &m) {
  m.def(
      "buffer_address",
      [](py::handle obj, bool writable) {
        Span s = BufferSpan(obj, writable);
        return py::make_tuple(s.addr, s.len);
      },
      py::arg("obj"), py::kw_only(), py::arg("writable") = true,
      "[hixl extension] (address, nbytes) of the memory of a C-contiguous buffer-protocol object (NumPy array, "
      "bytearray, memoryview, mmap...). With writable=True (the default) a read-only buffer raises BufferError: "
      "use writable=False only for memory that is never written (the source of a WRITE). Non-contiguous buffers "
      "raise BufferError (ValueError for some exporters), objects without the buffer protocol TypeError.\n\n"
      "The address is valid only while obj is alive and not resized: keep obj referenced for as long as the "
      "address is used (registered or in a transfer).");

  m.def(
      "mem_desc",
      [](py::handle obj, bool writable) {
        Span s = BufferSpan(obj, writable);
        hixl::MemDesc d;
        d.addr = s.addr;
        d.len = s.len;
        return d;
      },
      py::arg("obj"), py::kw_only(), py::arg("writable") = true,
      "[hixl extension] MemDesc covering all of obj's memory, for Hixl.register_mem. Same rules as "
      "buffer_address: keep obj alive until deregister_mem returns (Hixl.register_buffer does that for you).");

  m.def(
      "transfer_op_desc",
      [](py::handle local, uintptr_t remote_addr, size_t local_offset, std::optional<size_t> length,
         size_t remote_offset, bool writable) {
        Span s = BufferSpan(local, writable);
        if (local_offset > s.len) {
          throw py::value_error("hixl: local_offset " + std::to_string(local_offset) + " is past the end of the " +
                                std::to_string(s.len) + "-byte buffer");
        }
        size_t len = s.len - local_offset;
        if (length.has_value()) {
          len = *length;
          if (len > s.len - local_offset) {
            throw py::value_error("hixl: local_offset " + std::to_string(local_offset) + " + length " +
                                  std::to_string(len) + " is past the end of the " + std::to_string(s.len) +
                                  "-byte buffer");
          }
        }
        if (remote_offset > std::numeric_limits<uintptr_t>::max() - remote_addr) {
          throw py::value_error("hixl: remote_addr + remote_offset does not fit in an address");
        }
        return hixl::TransferOpDesc{s.addr + local_offset, remote_addr + remote_offset, len};
      },
      py::arg("local"), py::arg("remote_addr"), py::arg("local_offset") = 0, py::arg("length") = py::none(),
      py::kw_only(), py::arg("remote_offset") = 0, py::arg("writable") = true,
      "[hixl extension] TransferOpDesc for bytes [local_offset, local_offset+length) of the buffer-protocol "
      "object `local` (length=None: to its end) and the remote address remote_addr+remote_offset. Raises "
      "ValueError if the range is not inside `local`. writable=True (the default) is required when the "
      "descriptor is used for a READ (local memory is written); writable=False allows read-only sources of a "
      "WRITE. Keep `local` alive until the transfer is over.");
}

}  // namespace hixl_py
