// cuda_api.h: the part of the CUDA driver API hixl calls, declared here so
// that hixl builds without CUDA and loads libcuda.so.1 at run time. Each
// function's type is written once, over a set of types (Api<T>): OurTypes
// here, and cuda.h's own in cuda_api_check.cc, which (where the build finds
// cuda.h) asserts that the two agree -- function types, type sizes, constant
// values, and the versioned symbol name each function is looked up by.
#pragma once

#include <cstddef>

namespace hixl::cuda {

// The layouts cuda.h gives these types on 64-bit Linux.
struct CtxSt;
struct StreamSt;
struct EventSt;
struct IpcMemHandleOurs {
  char reserved[64];
};

struct OurTypes {
  using Result = int;  // CUresult (an enum of int size)
  using Device = int;
  using DevicePtr = unsigned long long;
  using Context = CtxSt *;
  using Stream = StreamSt *;
  using Event = EventSt *;
  using PointerAttribute = int;  // CUpointer_attribute
  using IpcMemHandle = IpcMemHandleOurs;
};

template <class T>
struct Api {
  using R = typename T::Result;
  using P = typename T::DevicePtr;
  using Init = R (*)(unsigned int);
  using DeviceGetCount = R (*)(int *);
  using DeviceGet = R (*)(typename T::Device *, int);
  using DevicePrimaryCtxRetain = R (*)(typename T::Context *, typename T::Device);
  using CtxSetCurrent = R (*)(typename T::Context);
  using GetErrorString = R (*)(R, const char **);
  using PointerGetAttributes = R (*)(unsigned int, typename T::PointerAttribute *, void **, P);
  using MemGetAddressRange = R (*)(P *, size_t *, P);
  using MemcpyHtoD = R (*)(P, const void *, size_t);
  using MemcpyDtoH = R (*)(void *, P, size_t);
  using MemcpyAsync = R (*)(P, P, size_t, typename T::Stream);
  using MemHostRegister = R (*)(void *, size_t, unsigned int);
  using MemHostUnregister = R (*)(void *);
  using IpcGetMemHandle = R (*)(typename T::IpcMemHandle *, P);
  using IpcOpenMemHandle = R (*)(P *, typename T::IpcMemHandle, unsigned int);
  using IpcCloseMemHandle = R (*)(P);
  using StreamCreate = R (*)(typename T::Stream *, unsigned int);
  using StreamDestroy = R (*)(typename T::Stream);
  using EventCreate = R (*)(typename T::Event *, unsigned int);
  using EventRecord = R (*)(typename T::Event, typename T::Stream);
  using EventQuery = R (*)(typename T::Event);
  using EventDestroy = R (*)(typename T::Event);
};

// The symbols libcuda exports for them (cuda.h maps several names to a
// versioned one: cuMemGetAddressRange is cuMemGetAddressRange_v2).
#define HIXL_CUDA_FUNCTIONS(X)                                  \
  X(Init, "cuInit")                                             \
  X(DeviceGetCount, "cuDeviceGetCount")                         \
  X(DeviceGet, "cuDeviceGet")                                   \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")         \
  X(CtxSetCurrent, "cuCtxSetCurrent")                           \
  X(GetErrorString, "cuGetErrorString")                         \
  X(PointerGetAttributes, "cuPointerGetAttributes")             \
  X(MemGetAddressRange, "cuMemGetAddressRange_v2")              \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2")                              \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2")                              \
  X(MemcpyAsync, "cuMemcpyAsync")                               \
  X(MemHostRegister, "cuMemHostRegister_v2")                    \
  X(MemHostUnregister, "cuMemHostUnregister")                   \
  X(IpcGetMemHandle, "cuIpcGetMemHandle")                       \
  X(IpcOpenMemHandle, "cuIpcOpenMemHandle_v2")                  \
  X(IpcCloseMemHandle, "cuIpcCloseMemHandle")                   \
  X(StreamCreate, "cuStreamCreate")                             \
  X(StreamDestroy, "cuStreamDestroy_v2")                        \
  X(EventCreate, "cuEventCreate")                               \
  X(EventRecord, "cuEventRecord")                               \
  X(EventQuery, "cuEventQuery")                                 \
  X(EventDestroy, "cuEventDestroy_v2")

// Constants, as cuda.h has them.
constexpr int kSuccess = 0;                 // CUDA_SUCCESS
constexpr int kErrorInvalidValue = 1;       // CUDA_ERROR_INVALID_VALUE
constexpr int kErrorNoDevice = 100;         // CUDA_ERROR_NO_DEVICE
constexpr int kErrorNotReady = 600;         // CUDA_ERROR_NOT_READY
constexpr int kAttrMemoryType = 2;          // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttrIsManaged = 8;           // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kAttrDeviceOrdinal = 9;       // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr int kAttrLegacyIpcCapable = 10;   // CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE
constexpr int kAttrRangeStart = 11;         // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
constexpr int kAttrRangeSize = 12;          // CU_POINTER_ATTRIBUTE_RANGE_SIZE
constexpr unsigned kMemoryTypeHost = 1;     // CU_MEMORYTYPE_HOST
constexpr unsigned kMemoryTypeDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr unsigned kIpcLazyPeerAccess = 1;  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
constexpr unsigned kStreamNonBlocking = 1;  // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDisableTiming = 2; // CU_EVENT_DISABLE_TIMING
constexpr unsigned kHostRegisterPortable = 1;  // CU_MEMHOSTREGISTER_PORTABLE
constexpr size_t kIpcHandleSize = 64;       // CU_IPC_HANDLE_SIZE

}  // namespace hixl::cuda
