// gpu_memory.h: real GPU memory for the GPU tests and the test peer
// (cuMemAlloc and plain copies, through libcuda.so.1 loaded here; hixl's
// own driver interface has no allocation calls). On a host without a GPU
// ok() is false and why() says so: the GPU tests skip with that message.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <string>

#include "device/cuda/cuda_api.h"

namespace hixl_test {

class GpuMemory {
 public:
  static GpuMemory &Get() {
    static GpuMemory g;
    return g;
  }
  bool ok() const { return ok_; }
  const std::string &why() const { return why_; }

  uintptr_t Alloc(size_t len) {
    Bind();
    unsigned long long p = 0;
    return alloc_(&p, len) == 0 ? static_cast<uintptr_t>(p) : 0;
  }
  void Free(uintptr_t p) {
    Bind();
    free_(p);
  }
  bool ToDevice(uintptr_t dst, const void *src, size_t n) {
    Bind();
    return htod_(dst, src, n) == 0;
  }
  bool FromDevice(void *dst, uintptr_t src, size_t n) {
    Bind();
    return dtoh_(dst, src, n) == 0;
  }
  // Device to device in this process, finished when it returns.
  bool DeviceToDevice(uintptr_t dst, uintptr_t src, size_t n) {
    Bind();
    return dtod_(dst, src, n) == 0 && sync_() == 0;
  }

 private:
  using A = hixl::cuda::Api<hixl::cuda::OurTypes>;
  GpuMemory() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      why_ = "no libcuda.so.1 (no NVIDIA driver on this host)";
      return;
    }
    auto init = reinterpret_cast<A::Init>(dlsym(lib, "cuInit"));
    auto count = reinterpret_cast<A::DeviceGetCount>(dlsym(lib, "cuDeviceGetCount"));
    auto get = reinterpret_cast<A::DeviceGet>(dlsym(lib, "cuDeviceGet"));
    auto retain = reinterpret_cast<A::DevicePrimaryCtxRetain>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    set_ = reinterpret_cast<A::CtxSetCurrent>(dlsym(lib, "cuCtxSetCurrent"));
    alloc_ = reinterpret_cast<int (*)(unsigned long long *, size_t)>(dlsym(lib, "cuMemAlloc_v2"));
    free_ = reinterpret_cast<int (*)(unsigned long long)>(dlsym(lib, "cuMemFree_v2"));
    htod_ = reinterpret_cast<A::MemcpyHtoD>(dlsym(lib, "cuMemcpyHtoD_v2"));
    dtoh_ = reinterpret_cast<A::MemcpyDtoH>(dlsym(lib, "cuMemcpyDtoH_v2"));
    dtod_ = reinterpret_cast<int (*)(unsigned long long, unsigned long long, size_t)>(dlsym(lib, "cuMemcpyDtoD_v2"));
    sync_ = reinterpret_cast<int (*)()>(dlsym(lib, "cuCtxSynchronize"));
    int n = 0, dev = 0;
    if (!init || !count || !get || !retain || !set_ || !alloc_ || !free_ || !htod_ || !dtoh_ || !dtod_ || !sync_) {
      why_ = "libcuda.so.1 lacks a function the GPU tests use";
    } else if (init(0) != 0 || count(&n) != 0 || n == 0) {
      why_ = "the NVIDIA driver sees no GPU (or libcuda.so.1 is the toolkit's stub)";
    } else if (get(&dev, 0) != 0 || retain(&ctx_, dev) != 0) {
      why_ = "cannot retain GPU 0's primary context";
    } else {
      ok_ = true;
    }
  }
  void Bind() { set_(ctx_); }

  bool ok_ = false;
  std::string why_;
  hixl::cuda::CtxSt *ctx_ = nullptr;
  A::CtxSetCurrent set_ = nullptr;
  int (*alloc_)(unsigned long long *, size_t) = nullptr;
  int (*free_)(unsigned long long) = nullptr;
  A::MemcpyHtoD htod_ = nullptr;
  A::MemcpyDtoH dtoh_ = nullptr;
  int (*dtod_)(unsigned long long, unsigned long long, size_t) = nullptr;
  int (*sync_)() = nullptr;
};

}  // namespace hixl_test
