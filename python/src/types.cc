// types.cc: status codes, option keys, enums and the plain data classes
// (MemDesc, TransferOpDesc, TransferArgs, GetTransferStatusArgs,
// TransferResult, NotifyDesc).
#include <cinttypes>
#include <cstdio>
#include <string>

#include "hixl_py.h"

namespace hixl_py {

std::string BytesArg(py::handle h, const char *what) {
  PyObject *o = h.ptr();
  if (PyUnicode_Check(o)) {
    auto encoded = py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape"));
    if (!encoded) throw py::error_already_set();
    return std::string(PyBytes_AS_STRING(encoded.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(encoded.ptr())));
  }
  if (PyBytes_Check(o)) return std::string(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o)));
  if (PyByteArray_Check(o)) {
    return std::string(PyByteArray_AS_STRING(o), static_cast<size_t>(PyByteArray_GET_SIZE(o)));
  }
  throw py::type_error(std::string(what) + " must be str or bytes, not " + Py_TYPE(o)->tp_name);
}

py::str DecodeText(const char *data, size_t len) {
  PyObject *s = PyUnicode_DecodeUTF8(data, static_cast<Py_ssize_t>(len), "surrogateescape");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

namespace {

py::bytes RawBytes(const hixl::AscendString &s) { return py::bytes(s.GetString(), s.GetLength()); }

const char *StatusName(uint64_t code) {
  switch (code) {
    case hixl::SUCCESS: return "SUCCESS";
    case hixl::PARAM_INVALID: return "PARAM_INVALID";
    case hixl::TIMEOUT: return "TIMEOUT";
    case hixl::NOT_CONNECTED: return "NOT_CONNECTED";
    case hixl::ALREADY_CONNECTED: return "ALREADY_CONNECTED";
    case hixl::NOTIFY_FAILED: return "NOTIFY_FAILED";
    case hixl::UNSUPPORTED: return "UNSUPPORTED";
    case hixl::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case hixl::FAILED: return "FAILED";
    default: return nullptr;
  }
}

std::string Hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIxPTR, v);
  return buf;
}

void BindConstants(py::module_ &m) {
  m.attr("SUCCESS") = py::int_(hixl::SUCCESS);
  m.attr("PARAM_INVALID") = py::int_(hixl::PARAM_INVALID);
  m.attr("TIMEOUT") = py::int_(hixl::TIMEOUT);
  m.attr("NOT_CONNECTED") = py::int_(hixl::NOT_CONNECTED);
  m.attr("ALREADY_CONNECTED") = py::int_(hixl::ALREADY_CONNECTED);
  m.attr("NOTIFY_FAILED") = py::int_(hixl::NOTIFY_FAILED);
  m.attr("UNSUPPORTED") = py::int_(hixl::UNSUPPORTED);
  m.attr("RESOURCE_EXHAUSTED") = py::int_(hixl::RESOURCE_EXHAUSTED);
  m.attr("FAILED") = py::int_(hixl::FAILED);

  m.attr("OPTION_ENABLE_USE_FABRIC_MEM") = py::str(hixl::OPTION_ENABLE_USE_FABRIC_MEM);
  m.attr("OPTION_RDMA_TRAFFIC_CLASS") = py::str(hixl::OPTION_RDMA_TRAFFIC_CLASS);
  m.attr("OPTION_RDMA_SERVICE_LEVEL") = py::str(hixl::OPTION_RDMA_SERVICE_LEVEL);
  m.attr("OPTION_BUFFER_POOL") = py::str(hixl::OPTION_BUFFER_POOL);
  m.attr("OPTION_GLOBAL_RESOURCE_CONFIG") = py::str(hixl::OPTION_GLOBAL_RESOURCE_CONFIG);
  m.attr("OPTION_AUTO_CONNECT") = py::str(hixl::OPTION_AUTO_CONNECT);
  m.attr("OPTION_LOCAL_COMM_RES") = py::str(hixl::OPTION_LOCAL_COMM_RES);

  m.attr("FEATURE_SUPPORTED") = py::int_(hixl::FEATURE_SUPPORTED);
  m.attr("FEATURE_NOT_SUPPORTED") = py::int_(hixl::FEATURE_NOT_SUPPORTED);

  m.def(
      "status_name",
      [](py::int_ code) -> std::string {
        // Any int is accepted: unknown, negative or huge codes just have no name.
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(code.ptr(), &overflow);
        if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
        const char *name = (overflow == 0 && v >= 0) ? StatusName(static_cast<uint64_t>(v)) : nullptr;
        return name != nullptr ? std::string(name) : "UNKNOWN(" + py::str(code).cast<std::string>() + ")";
      },
      py::arg("status"),
      "Name of a status code (\"SUCCESS\", \"TIMEOUT\", ...), or \"UNKNOWN(<code>)\". For messages and logs.");
}

void BindEnums(py::module_ &m) {
  py::enum_<hixl::MemType>(m, "MemType", "Kind of memory given to Hixl.register_mem (C++ hixl::MemType).")
      .value("MEM_DEVICE", hixl::MEM_DEVICE,
             "Accelerator memory (UNSUPPORTED in builds without an accelerator runtime).")
      .value("MEM_HOST", hixl::MEM_HOST, "Host memory of this process (NumPy arrays, bytearrays, mmap...).")
      .export_values();

  py::enum_<hixl::TransferOp>(m, "TransferOp", "Direction of a transfer (C++ hixl::TransferOp).")
      .value("READ", hixl::READ, "Copy remote memory into local memory.")
      .value("WRITE", hixl::WRITE, "Copy local memory into remote memory.")
      .export_values();

  // Not exported at module level: TIMEOUT and FAILED are status codes there
  // (as in HIXL's own module). Use hixl.TransferStatus.COMPLETED etc.
  py::enum_<hixl::TransferStatus>(m, "TransferStatus",
                                  "State of an asynchronous transfer (C++ enum class hixl::TransferStatus). Its "
                                  "values are not exported at module level: hixl.TIMEOUT and hixl.FAILED are "
                                  "status codes.")
      .value("WAITING", hixl::TransferStatus::WAITING)
      .value("COMPLETED", hixl::TransferStatus::COMPLETED)
      .value("TIMEOUT", hixl::TransferStatus::TIMEOUT)
      .value("FAILED", hixl::TransferStatus::FAILED);

  py::enum_<hixl::AsyncConnectStatus>(m, "AsyncConnectStatus",
                                      "State of the latest connect_async/disconnect_async task for a remote "
                                      "(C++ enum class hixl::AsyncConnectStatus).")
      .value("NOT_CONNECT", hixl::AsyncConnectStatus::NOT_CONNECT)
      .value("CONNECT_PENDING", hixl::AsyncConnectStatus::CONNECT_PENDING)
      .value("CONNECTING", hixl::AsyncConnectStatus::CONNECTING)
      .value("CONNECTED", hixl::AsyncConnectStatus::CONNECTED)
      .value("CONNECT_FAILED", hixl::AsyncConnectStatus::CONNECT_FAILED)
      .value("DISCONNECT_PENDING", hixl::AsyncConnectStatus::DISCONNECT_PENDING)
      .value("DISCONNECTING", hixl::AsyncConnectStatus::DISCONNECTING)
      .export_values();

  py::enum_<hixl::FeatureType>(m, "FeatureType", "Feature queried by get_capability (C++ hixl::FeatureType).")
      .value("AUTO_CONNECT", hixl::AUTO_CONNECT)
      .value("CLIENT_SERVER_COMM", hixl::CLIENT_SERVER_COMM)
      .export_values();
}

void BindDataClasses(py::module_ &m) {
  py::class_<hixl::MemDesc>(m, "MemDesc",
                            "A memory region: start address and length in bytes (C++ hixl::MemDesc). "
                            "hixl.mem_desc(obj) builds one from any buffer-protocol object.")
      .def(py::init([](uintptr_t addr, size_t len) {
             hixl::MemDesc d;
             d.addr = addr;
             d.len = len;
             return d;
           }),
           py::arg("addr"), py::arg("len"))
      .def_readwrite("addr", &hixl::MemDesc::addr, "Start address (int).")
      .def_readwrite("len", &hixl::MemDesc::len, "Length in bytes.")
      .def(
          "__eq__",
          [](const hixl::MemDesc &a, const hixl::MemDesc &b) { return a.addr == b.addr && a.len == b.len; },
          py::is_operator())
      .def("__repr__", [](const hixl::MemDesc &d) {
        return "MemDesc(addr=" + Hex(d.addr) + ", len=" + std::to_string(d.len) + ")";
      });

  py::class_<hixl::TransferOpDesc>(m, "TransferOpDesc",
                                   "One piece of a transfer: local address, remote address, length "
                                   "(C++ hixl::TransferOpDesc). hixl.transfer_op_desc(local_obj, remote_addr, ...) "
                                   "builds one from a buffer-protocol object.")
      .def(py::init([](uintptr_t local_addr, uintptr_t remote_addr, size_t len) {
             return hixl::TransferOpDesc{local_addr, remote_addr, len};
           }),
           py::arg("local_addr"), py::arg("remote_addr"), py::arg("len"))
      .def_readwrite("local_addr", &hixl::TransferOpDesc::local_addr)
      .def_readwrite("remote_addr", &hixl::TransferOpDesc::remote_addr)
      .def_readwrite("len", &hixl::TransferOpDesc::len)
      .def("__eq__",
           [](const hixl::TransferOpDesc &a, const hixl::TransferOpDesc &b) {
             return a.local_addr == b.local_addr && a.remote_addr == b.remote_addr && a.len == b.len;
           },
           py::is_operator())
      .def("__repr__", [](const hixl::TransferOpDesc &d) {
        return "TransferOpDesc(local_addr=" + Hex(d.local_addr) + ", remote_addr=" + Hex(d.remote_addr) +
               ", len=" + std::to_string(d.len) + ")";
      });

  py::class_<PyTransferArgs>(m, "TransferArgs",
                             "Optional arguments of Hixl.transfer_async (C++ hixl::TransferArgs). user_data may be "
                             "any Python object: the binding keeps it alive until the request is reported finished "
                             "and returns it in TransferResult.user_data.")
      .def(py::init([](py::object user_data) {
             PyTransferArgs a;
             a.user_data = std::move(user_data);
             return a;
           }),
           py::arg("user_data") = 0)
      .def_readwrite("user_data", &PyTransferArgs::user_data, "Any object (default 0, as HIXL's module).")
      .def("__repr__", [](const PyTransferArgs &a) {
        return "TransferArgs(user_data=" + py::repr(a.user_data).cast<std::string>() + ")";
      });

  py::class_<hixl::GetTransferStatusArgs>(m, "GetTransferStatusArgs",
                                          "Arguments of the batch form of Hixl.get_transfer_status "
                                          "(C++ hixl::GetTransferStatusArgs).")
      .def(py::init([](uint32_t max_query_count, bool skip_waiting) {
             hixl::GetTransferStatusArgs a;
             a.max_query_count = max_query_count;
             a.skip_waiting = skip_waiting;
             return a;
           }),
           py::arg("max_query_count") = UINT32_MAX, py::arg("skip_waiting") = false)
      .def_readwrite("max_query_count", &hixl::GetTransferStatusArgs::max_query_count,
                     "Report at most this many requests (default 2**32-1).")
      .def_readwrite("skip_waiting", &hixl::GetTransferStatusArgs::skip_waiting,
                     "Leave out requests still WAITING (default False).")
      .def("__repr__", [](const hixl::GetTransferStatusArgs &a) {
        return "GetTransferStatusArgs(max_query_count=" + std::to_string(a.max_query_count) +
               ", skip_waiting=" + (a.skip_waiting ? "True" : "False") + ")";
      });

  py::class_<PyTransferResult>(m, "TransferResult",
                               "One request reported by the batch form of Hixl.get_transfer_status "
                               "(C++ hixl::TransferResult).")
      .def(py::init([](uintptr_t req, py::object user_data, hixl::TransferStatus status) {
             PyTransferResult r;
             r.req = req;
             r.user_data = std::move(user_data);
             r.status = status;
             return r;
           }),
           py::arg("req") = 0, py::arg("user_data") = 0, py::arg("status") = hixl::TransferStatus::WAITING)
      .def_readwrite("req", &PyTransferResult::req, "The request handle transfer_async returned (int).")
      .def_readwrite("user_data", &PyTransferResult::user_data,
                     "The TransferArgs.user_data of that request (0 when it had none).")
      .def_readwrite("status", &PyTransferResult::status, "Its TransferStatus.")
      .def("__repr__", [](const PyTransferResult &r) {
        return "TransferResult(req=" + Hex(r.req) + ", user_data=" + py::repr(r.user_data).cast<std::string>() +
               ", status=" + py::str(py::cast(r.status)).cast<std::string>() + ")";
      });

  py::class_<hixl::NotifyDesc>(m, "NotifyDesc",
                               "A notify: name and message (C++ hixl::NotifyDesc), each at most 1024 bytes. Both "
                               "accept str (sent as UTF-8) or bytes; they read back as str (bytes that are not "
                               "UTF-8 as lone surrogates, see 'surrogateescape'), and as bytes through name_bytes "
                               "and notify_msg_bytes.")
      .def(py::init([](py::object name, py::object notify_msg) {
             hixl::NotifyDesc n;
             n.name = ToAscend(BytesArg(name, "name"));
             n.notify_msg = ToAscend(BytesArg(notify_msg, "notify_msg"));
             return n;
           }),
           py::arg("name") = py::str(""), py::arg("notify_msg") = py::str(""))
      .def_property(
          "name", [](const hixl::NotifyDesc &n) { return DecodeText(n.name); },
          [](hixl::NotifyDesc &n, py::object v) { n.name = ToAscend(BytesArg(v, "name")); })
      .def_property(
          "notify_msg", [](const hixl::NotifyDesc &n) { return DecodeText(n.notify_msg); },
          [](hixl::NotifyDesc &n, py::object v) { n.notify_msg = ToAscend(BytesArg(v, "notify_msg")); })
      .def_property_readonly("name_bytes", [](const hixl::NotifyDesc &n) { return RawBytes(n.name); })
      .def_property_readonly("notify_msg_bytes", [](const hixl::NotifyDesc &n) { return RawBytes(n.notify_msg); })
      .def("__eq__",
           [](const hixl::NotifyDesc &a, const hixl::NotifyDesc &b) {
             return a.name == b.name && a.notify_msg == b.notify_msg;
           },
           py::is_operator())
      .def("__repr__", [](const hixl::NotifyDesc &n) {
        return "NotifyDesc(name=" + py::repr(DecodeText(n.name)).cast<std::string>() +
               ", notify_msg=" + py::repr(DecodeText(n.notify_msg)).cast<std::string>() + ")";
      });
}

}  // namespace

void BindTypes(py::module_ &m) {
  BindConstants(m);
  BindEnums(m);
  BindDataClasses(m);
}

}  // namespace hixl_py
