// fake_libcuda.cc: libcuda.so.1 for tests on machines without a GPU: the
// driver API functions hixl's real driver (src/device/cuda/cuda_driver.cc)
// and the GPU tests (support/gpu_memory.h) call, over one FakeCuda per
// process. Put first on LD_LIBRARY_PATH, it runs the two-process GPU tests
// (tests/integration/gpu_test.cc) everywhere: two processes, two address
// spaces, IPC handles opened across them (see fake_cuda.h), and hixl's
// real driver code loading and calling it.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "device/cuda/cuda_api.h"
#include "support/fake_cuda/fake_cuda.h"

namespace hixl::cuda {
// The driver's handle types, as this fake has them.
struct CtxSt {
  int ordinal;
};
struct StreamSt {
  int unused;
};
struct EventSt {
  int unused;
};
}  // namespace hixl::cuda

namespace {

using hixl::cuda::CtxSt;
using hixl::cuda::EventSt;
using hixl::cuda::IpcMemHandleOurs;
using hixl::cuda::StreamSt;
using P = unsigned long long;

constexpr int kErrorInvalidContext = 201;  // CUDA_ERROR_INVALID_CONTEXT
constexpr int kErrorInvalidDevice = 101;   // CUDA_ERROR_INVALID_DEVICE
constexpr int kMaxDevices = 8;

hixl_test::FakeCuda &Fake() {
  static auto *fake = new hixl_test::FakeCuda();  // never destroyed: CUDA lives as long as the process
  return *fake;
}

int Devices() {
  static const int n = [] {
    const char *v = std::getenv("HIXL_FAKE_CUDA_DEVICES");
    const int d = v != nullptr ? std::atoi(v) : 1;
    return d < 1 ? 1 : (d > kMaxDevices ? kMaxDevices : d);
  }();
  return n;
}

CtxSt g_contexts[kMaxDevices] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
thread_local CtxSt *t_current = nullptr;

// The current context's device, or -1 (no context: the call fails).
int Current() { return t_current != nullptr ? t_current->ordinal : -1; }

int Result(bool ok) { return ok ? hixl::cuda::kSuccess : hixl::cuda::kErrorInvalidValue; }

}  // namespace

#define FAKE_CUDA_API extern "C" __attribute__((visibility("default")))

FAKE_CUDA_API int cuInit(unsigned int) { return hixl::cuda::kSuccess; }

FAKE_CUDA_API int cuDeviceGetCount(int *n) {
  *n = Devices();
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuDeviceGet(int *dev, int ordinal) {
  if (ordinal < 0 || ordinal >= Devices()) return kErrorInvalidDevice;
  *dev = ordinal;
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuDevicePrimaryCtxRetain(CtxSt **ctx, int dev) {
  if (dev < 0 || dev >= Devices()) return kErrorInvalidDevice;
  *ctx = &g_contexts[dev];
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuCtxSetCurrent(CtxSt *ctx) {
  t_current = ctx;
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuCtxSynchronize() { return Current() < 0 ? kErrorInvalidContext : hixl::cuda::kSuccess; }

FAKE_CUDA_API int cuGetErrorString(int rc, const char **s) {
  switch (rc) {
    case hixl::cuda::kSuccess: *s = "no error (fake libcuda)"; break;
    case hixl::cuda::kErrorInvalidValue: *s = "invalid argument (fake libcuda)"; break;
    case kErrorInvalidContext: *s = "invalid device context (fake libcuda)"; break;
    case kErrorInvalidDevice: *s = "invalid device ordinal (fake libcuda)"; break;
    case hixl::cuda::kErrorNotReady: *s = "device not ready (fake libcuda)"; break;
    default: *s = "unknown error (fake libcuda)"; break;
  }
  return hixl::cuda::kSuccess;
}

// Device memory of this process: its attributes. Anything else: memory the
// driver does not know (type 0), as for plain host memory.
FAKE_CUDA_API int cuPointerGetAttributes(unsigned int n, int *attrs, void **data, P ptr) {
  hixl::cuda::PointerInfo info;
  std::string why;
  Fake().Query(static_cast<uintptr_t>(ptr), &info, &why);
  for (unsigned i = 0; i < n; ++i) {
    switch (attrs[i]) {
      case hixl::cuda::kAttrMemoryType:
        *static_cast<unsigned *>(data[i]) = info.device ? hixl::cuda::kMemoryTypeDevice : 0;
        break;
      case hixl::cuda::kAttrIsManaged: *static_cast<unsigned *>(data[i]) = 0; break;
      case hixl::cuda::kAttrDeviceOrdinal: *static_cast<int *>(data[i]) = info.device ? info.ordinal : -2; break;
      case hixl::cuda::kAttrLegacyIpcCapable: *static_cast<unsigned *>(data[i]) = info.device ? 1 : 0; break;
      case hixl::cuda::kAttrRangeStart: *static_cast<P *>(data[i]) = info.base; break;
      case hixl::cuda::kAttrRangeSize: *static_cast<size_t *>(data[i]) = info.size; break;
      default: return hixl::cuda::kErrorInvalidValue;
    }
  }
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuMemGetAddressRange_v2(P *base, size_t *size, P ptr) {
  hixl::cuda::PointerInfo info;
  std::string why;
  Fake().Query(static_cast<uintptr_t>(ptr), &info, &why);
  if (Current() < 0) return kErrorInvalidContext;
  if (!info.device) return hixl::cuda::kErrorInvalidValue;
  if (base != nullptr) *base = info.base;
  if (size != nullptr) *size = info.size;
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuMemAlloc_v2(P *p, size_t len) {
  if (Current() < 0) return kErrorInvalidContext;
  *p = Fake().Alloc(len, Current());
  return *p != 0 ? hixl::cuda::kSuccess : 2;  // CUDA_ERROR_OUT_OF_MEMORY
}

FAKE_CUDA_API int cuMemFree_v2(P p) {
  if (Current() < 0) return kErrorInvalidContext;
  return Result(Fake().Free(static_cast<uintptr_t>(p)));
}

FAKE_CUDA_API int cuMemcpyHtoD_v2(P dst, const void *src, size_t n) {
  std::string why;
  if (Current() < 0) return kErrorInvalidContext;
  return Result(Fake().CopyToDevice(Current(), static_cast<uintptr_t>(dst), src, n, &why));
}

FAKE_CUDA_API int cuMemcpyDtoH_v2(void *dst, P src, size_t n) {
  std::string why;
  if (Current() < 0) return kErrorInvalidContext;
  return Result(Fake().CopyFromDevice(Current(), dst, static_cast<uintptr_t>(src), n, &why));
}

FAKE_CUDA_API int cuMemcpyAsync(P dst, P src, size_t n, StreamSt *) {
  std::string why;
  if (Current() < 0) return kErrorInvalidContext;
  return Result(Fake().CopyAsync(Current(), static_cast<uintptr_t>(dst), static_cast<uintptr_t>(src), n, nullptr,
                                 &why));
}

FAKE_CUDA_API int cuMemcpyDtoD_v2(P dst, P src, size_t n) { return cuMemcpyAsync(dst, src, n, nullptr); }

FAKE_CUDA_API int cuMemHostRegister_v2(void *p, size_t n, unsigned int) {
  std::string why;
  if (Current() < 0) return kErrorInvalidContext;
  return Result(hixl_test::HostAccessible(reinterpret_cast<uintptr_t>(p), n, false) && Fake().PinHost(p, n, &why));
}

FAKE_CUDA_API int cuMemHostUnregister(void *p) {
  Fake().UnpinHost(p);
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuIpcGetMemHandle(IpcMemHandleOurs *h, P base) {
  hixl::cuda::IpcHandle handle{};
  std::string why;
  if (Current() < 0) return kErrorInvalidContext;
  if (!Fake().IpcExport(Current(), static_cast<uintptr_t>(base), &handle, &why)) return hixl::cuda::kErrorInvalidValue;
  std::memcpy(h->reserved, handle.bytes, sizeof(h->reserved));
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuIpcOpenMemHandle_v2(P *p, IpcMemHandleOurs h, unsigned int) {
  hixl::cuda::IpcHandle handle{};
  std::memcpy(handle.bytes, h.reserved, sizeof(handle.bytes));
  uintptr_t base = 0;
  std::string why;
  if (Current() < 0) return kErrorInvalidContext;
  if (!Fake().IpcOpen(Current(), handle, &base, &why)) return 400;  // CUDA_ERROR_INVALID_HANDLE
  *p = base;
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuIpcCloseMemHandle(P p) {
  std::string why;
  if (Current() < 0) return kErrorInvalidContext;
  return Result(Fake().IpcClose(Current(), static_cast<uintptr_t>(p), &why));
}

// Copies are done when cuMemcpyAsync returns: streams and events only count.
FAKE_CUDA_API int cuStreamCreate(StreamSt **s, unsigned int) {
  if (Current() < 0) return kErrorInvalidContext;
  *s = new StreamSt{0};
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuStreamDestroy_v2(StreamSt *s) {
  delete s;
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuEventCreate(EventSt **e, unsigned int) {
  if (Current() < 0) return kErrorInvalidContext;
  *e = new EventSt{0};
  return hixl::cuda::kSuccess;
}

FAKE_CUDA_API int cuEventRecord(EventSt *, StreamSt *) { return hixl::cuda::kSuccess; }
FAKE_CUDA_API int cuEventQuery(EventSt *) { return hixl::cuda::kSuccess; }

FAKE_CUDA_API int cuEventDestroy_v2(EventSt *e) {
  delete e;
  return hixl::cuda::kSuccess;
}

// Not CUDA's: lets a test see that the libcuda.so.1 it loaded is this one.
FAKE_CUDA_API const char *hixl_fake_libcuda() { return "fake libcuda (tests/support/fake_cuda)"; }

// The functions hixl looks up have the types hixl declares (and cuda_api_check.cc
// checks those against cuda.h).
namespace {
using A = hixl::cuda::Api<hixl::cuda::OurTypes>;
#define FAKE_CUDA_SAME_TYPE(name, symbol) \
  static_assert(std::is_same_v<A::name, decltype(&FAKE_CUDA_FN_##name)>, symbol);
#define FAKE_CUDA_FN_Init cuInit
#define FAKE_CUDA_FN_DeviceGetCount cuDeviceGetCount
#define FAKE_CUDA_FN_DeviceGet cuDeviceGet
#define FAKE_CUDA_FN_DevicePrimaryCtxRetain cuDevicePrimaryCtxRetain
#define FAKE_CUDA_FN_CtxSetCurrent cuCtxSetCurrent
#define FAKE_CUDA_FN_GetErrorString cuGetErrorString
#define FAKE_CUDA_FN_PointerGetAttributes cuPointerGetAttributes
#define FAKE_CUDA_FN_MemGetAddressRange cuMemGetAddressRange_v2
#define FAKE_CUDA_FN_MemcpyHtoD cuMemcpyHtoD_v2
#define FAKE_CUDA_FN_MemcpyDtoH cuMemcpyDtoH_v2
#define FAKE_CUDA_FN_MemcpyAsync cuMemcpyAsync
#define FAKE_CUDA_FN_MemHostRegister cuMemHostRegister_v2
#define FAKE_CUDA_FN_MemHostUnregister cuMemHostUnregister
#define FAKE_CUDA_FN_IpcGetMemHandle cuIpcGetMemHandle
#define FAKE_CUDA_FN_IpcOpenMemHandle cuIpcOpenMemHandle_v2
#define FAKE_CUDA_FN_IpcCloseMemHandle cuIpcCloseMemHandle
#define FAKE_CUDA_FN_StreamCreate cuStreamCreate
#define FAKE_CUDA_FN_StreamDestroy cuStreamDestroy_v2
#define FAKE_CUDA_FN_EventCreate cuEventCreate
#define FAKE_CUDA_FN_EventRecord cuEventRecord
#define FAKE_CUDA_FN_EventQuery cuEventQuery
#define FAKE_CUDA_FN_EventDestroy cuEventDestroy_v2
HIXL_CUDA_FUNCTIONS(FAKE_CUDA_SAME_TYPE)
}  // namespace
