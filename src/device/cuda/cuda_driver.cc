// cuda_driver.cc: the Driver that calls libcuda.so.1 (the driver API only),
// loaded with dlopen on first use. Each call makes the primary context of
// the device it names current on the calling thread first (the context
// PyTorch and the runtime API use, so their pointers are valid in it).
#include "device/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <map>

#include "common/mutex.h"
#include "device/cuda/cuda_api.h"

namespace hixl::cuda {
namespace {

using A = Api<OurTypes>;
constexpr char kLibrary[] = "libcuda.so.1";
constexpr int kErrorStubLibrary = 34;  // CUDA_ERROR_STUB_LIBRARY

struct Functions {
#define HIXL_CUDA_MEMBER(name, symbol) A::name name = nullptr;
  HIXL_CUDA_FUNCTIONS(HIXL_CUDA_MEMBER)
#undef HIXL_CUDA_MEMBER
};

class RealDriver final : public Driver {
 public:
  // nullptr with why when libcuda cannot be loaded or has no device.
  static RealDriver *Load(void *lib, std::string *why) {
    auto d = new RealDriver();
#define HIXL_CUDA_LOOKUP(name, symbol)                                  \
  d->fn_.name = reinterpret_cast<A::name>(dlsym(lib, symbol));          \
  if (d->fn_.name == nullptr) {                                         \
    *why = std::string(kLibrary) + " has no " symbol " (a driver older than CUDA 11?)"; \
    delete d;                                                           \
    return nullptr;                                                     \
  }
    HIXL_CUDA_FUNCTIONS(HIXL_CUDA_LOOKUP)
#undef HIXL_CUDA_LOOKUP
    int rc = d->fn_.Init(0);
    if (rc == kErrorStubLibrary) {
      *why = std::string(kLibrary) + " is the CUDA toolkit's stub, not a driver (no NVIDIA driver installed)";
    } else if (rc == kErrorNoDevice) {
      *why = "the NVIDIA driver sees no GPU (cuInit: CUDA_ERROR_NO_DEVICE)";
    } else if (rc != kSuccess) {
      *why = "cuInit failed: " + d->Error(rc);
    } else if ((rc = d->fn_.DeviceGetCount(&d->devices_)) != kSuccess || d->devices_ <= 0) {
      *why = rc != kSuccess ? "cuDeviceGetCount failed: " + d->Error(rc) : "the NVIDIA driver sees no GPU";
    } else {
      return d;
    }
    delete d;
    return nullptr;
  }

  std::string Describe() const override {
    return std::string(kLibrary) + ", " + std::to_string(devices_) + " device(s)";
  }

  bool Query(uintptr_t addr, PointerInfo *out, std::string *why) override {
    *out = PointerInfo{};
    unsigned memory_type = 0;
    unsigned managed = 0;
    int ordinal = -1;
    unsigned long long start = 0;
    size_t size = 0;
    unsigned ipc = 0;
    int attrs[] = {kAttrMemoryType, kAttrIsManaged, kAttrDeviceOrdinal, kAttrRangeStart, kAttrRangeSize,
                   kAttrLegacyIpcCapable};
    void *data[] = {&memory_type, &managed, &ordinal, &start, &size, &ipc};
    int rc = fn_.PointerGetAttributes(6, attrs, data, addr);
    // Memory CUDA does not know: no attributes (or INVALID_VALUE from old
    // drivers), i.e. plain host memory.
    if (rc == kErrorInvalidValue || (rc == kSuccess && memory_type == 0)) return true;
    if (rc != kSuccess) return Fail("cuPointerGetAttributes", rc, why);
    out->managed = managed != 0;
    out->device = memory_type == kMemoryTypeDevice && !out->managed;
    out->ordinal = ordinal;
    out->ipc_capable = ipc != 0;
    if (!out->device) return true;
    // The allocation holding it, as cuMemGetAddressRange sees it (in the
    // device's context: the attribute alone is not given by every driver).
    if (!Bind(ordinal, why)) return false;
    unsigned long long base = 0;
    rc = fn_.MemGetAddressRange(&base, &size, addr);
    if (rc != kSuccess) return Fail("cuMemGetAddressRange", rc, why);
    out->base = static_cast<uintptr_t>(base);
    out->size = size;
    return true;
  }

  bool CopyToDevice(int ordinal, uintptr_t dst, const void *src, size_t n, std::string *why) override {
    return Bind(ordinal, why) && Check("cuMemcpyHtoD", fn_.MemcpyHtoD(dst, src, n), why);
  }
  bool CopyFromDevice(int ordinal, void *dst, uintptr_t src, size_t n, std::string *why) override {
    return Bind(ordinal, why) && Check("cuMemcpyDtoH", fn_.MemcpyDtoH(dst, src, n), why);
  }
  bool PinHost(void *p, size_t n, std::string *why) override {
    return Bind(0, why) && Check("cuMemHostRegister", fn_.MemHostRegister(p, n, kHostRegisterPortable), why);
  }
  void UnpinHost(void *p) override {
    std::string why;
    if (Bind(0, &why)) fn_.MemHostUnregister(p);
  }

  bool IpcExport(int ordinal, uintptr_t base, IpcHandle *out, std::string *why) override {
    IpcMemHandleOurs h{};
    if (!Bind(ordinal, why) || !Check("cuIpcGetMemHandle", fn_.IpcGetMemHandle(&h, base), why)) return false;
    static_assert(sizeof(h) == sizeof(out->bytes));
    std::memcpy(out->bytes, h.reserved, sizeof(h));
    return true;
  }
  bool IpcOpen(int ordinal, const IpcHandle &handle, uintptr_t *base, std::string *why) override {
    IpcMemHandleOurs h{};
    std::memcpy(h.reserved, handle.bytes, sizeof(h));
    unsigned long long p = 0;
    if (!Bind(ordinal, why) || !Check("cuIpcOpenMemHandle", fn_.IpcOpenMemHandle(&p, h, kIpcLazyPeerAccess), why)) {
      return false;
    }
    *base = static_cast<uintptr_t>(p);
    return true;
  }
  bool IpcClose(int ordinal, uintptr_t base, std::string *why) override {
    return Bind(ordinal, why) && Check("cuIpcCloseMemHandle", fn_.IpcCloseMemHandle(base), why);
  }

  bool StreamCreate(int ordinal, Stream *out, std::string *why) override {
    StreamSt *s = nullptr;
    if (!Bind(ordinal, why) || !Check("cuStreamCreate", fn_.StreamCreate(&s, kStreamNonBlocking), why)) return false;
    *out = s;
    return true;
  }
  void StreamDestroy(int ordinal, Stream s) override {
    std::string why;
    if (Bind(ordinal, &why)) fn_.StreamDestroy(static_cast<StreamSt *>(s));
  }
  bool CopyAsync(int ordinal, uintptr_t dst, uintptr_t src, size_t n, Stream s, std::string *why) override {
    return Bind(ordinal, why) && Check("cuMemcpyAsync", fn_.MemcpyAsync(dst, src, n, static_cast<StreamSt *>(s)), why);
  }
  bool EventRecord(int ordinal, Stream s, Event *out, std::string *why) override {
    EventSt *e = nullptr;
    if (!Bind(ordinal, why) || !Check("cuEventCreate", fn_.EventCreate(&e, kEventDisableTiming), why)) return false;
    if (!Check("cuEventRecord", fn_.EventRecord(e, static_cast<StreamSt *>(s)), why)) {
      fn_.EventDestroy(e);
      return false;
    }
    *out = e;
    return true;
  }
  EventState EventQuery(int ordinal, Event e, std::string *why) override {
    if (!Bind(ordinal, why)) return EventState::kFailed;
    int rc = fn_.EventQuery(static_cast<EventSt *>(e));
    if (rc == kSuccess) return EventState::kDone;
    if (rc == kErrorNotReady) return EventState::kPending;
    Fail("cuEventQuery", rc, why);
    return EventState::kFailed;
  }
  void EventDestroy(int ordinal, Event e) override {
    std::string why;
    if (Bind(ordinal, &why)) fn_.EventDestroy(static_cast<EventSt *>(e));
  }

 private:
  std::string Error(int rc) const {
    const char *s = nullptr;
    if (fn_.GetErrorString != nullptr && fn_.GetErrorString(rc, &s) == kSuccess && s != nullptr) {
      return std::string(s) + " (" + std::to_string(rc) + ")";
    }
    return "CUresult " + std::to_string(rc);
  }
  bool Fail(const char *call, int rc, std::string *why) const {
    *why = std::string(call) + ": " + Error(rc);
    return false;
  }
  bool Check(const char *call, int rc, std::string *why) const { return rc == kSuccess || Fail(call, rc, why); }

  // Makes device `ordinal`'s primary context current on this thread (it is
  // retained once, for the life of the process). Every call: the
  // application may have made another context current since.
  bool Bind(int ordinal, std::string *why) {
    if (ordinal < 0 || ordinal >= devices_) {
      *why = "device ordinal " + std::to_string(ordinal) + " is not one of the " + std::to_string(devices_);
      return false;
    }
    CtxSt *ctx = nullptr;
    {
      MutexLock lock(&mu_);
      auto it = contexts_.find(ordinal);
      if (it != contexts_.end()) {
        ctx = it->second;
      } else {
        int dev = 0;
        int rc = fn_.DeviceGet(&dev, ordinal);
        if (rc == kSuccess) rc = fn_.DevicePrimaryCtxRetain(&ctx, dev);
        if (rc != kSuccess) return Fail("cuDevicePrimaryCtxRetain", rc, why);
        contexts_[ordinal] = ctx;
      }
    }
    return Check("cuCtxSetCurrent", fn_.CtxSetCurrent(ctx), why);
  }

  Functions fn_;
  int devices_ = 0;
  Mutex mu_;
  std::map<int, CtxSt *> contexts_ GUARDED_BY(mu_);
};

std::atomic<Driver *> g_test_driver{nullptr};

struct Loaded {
  Driver *driver = nullptr;
  std::string why;
};

const Loaded &LoadOnce() {
  // Never unloaded: CUDA keeps threads and state of its own.
  static const Loaded loaded = [] {
    Loaded l;
    dlerror();
    void *lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char *err = dlerror();
      l.why = std::string("cannot load ") + kLibrary + " (no NVIDIA driver on this host): " +
              (err != nullptr ? err : "dlopen failed");
      return l;
    }
    l.driver = RealDriver::Load(lib, &l.why);
    return l;
  }();
  return loaded;
}

}  // namespace

// The driver once GetDriver loaded it: read without the loader's lock.
std::atomic<Driver *> g_loaded{nullptr};

Driver *GetDriver(std::string *why) {
  if (Driver *d = g_test_driver.load(std::memory_order_acquire)) return d;
  const Loaded &l = LoadOnce();
  if (l.driver == nullptr && why != nullptr) *why = l.why;
  g_loaded.store(l.driver, std::memory_order_release);
  return l.driver;
}

// Not dlopen(RTLD_NOLOAD): it takes the dynamic loader's lock, and a
// child forked while another thread held it would hang in RegisterMem
// (ForkTest.AChildIsNotHeldByLocksThatParentThreadsHeldAtTheFork).
Driver *DriverIfLoaded() {
  if (Driver *d = g_test_driver.load(std::memory_order_acquire)) return d;
  return g_loaded.load(std::memory_order_acquire);
}

void SetDriverForTesting(Driver *d) { g_test_driver.store(d, std::memory_order_release); }

}  // namespace hixl::cuda
