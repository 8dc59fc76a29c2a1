// cuda_api_check.cc: compiled only where the build finds cuda.h (see
// CMakeLists.txt). Fails the build if cuda_api.h disagrees with it: a
// function's type, a type's size, a constant, or the symbol a function is
// looked up by. Holds no code.
#include <cuda.h>

#include <string_view>
#include <type_traits>

#include "device/cuda/cuda_api.h"

namespace hixl::cuda {
namespace {

struct CudaHTypes {
  using Result = CUresult;
  using Device = CUdevice;
  using DevicePtr = CUdeviceptr;
  using Context = CUcontext;
  using Stream = CUstream;
  using Event = CUevent;
  using PointerAttribute = CUpointer_attribute;
  using IpcMemHandle = CUipcMemHandle;
};

template <class A, class B>
constexpr bool SameLayout = sizeof(A) == sizeof(B) && alignof(A) == alignof(B);

static_assert(SameLayout<OurTypes::Result, CUresult>);
static_assert(SameLayout<OurTypes::Device, CUdevice>);
static_assert(std::is_same_v<OurTypes::DevicePtr, CUdeviceptr>);
static_assert(SameLayout<OurTypes::Context, CUcontext>);
static_assert(SameLayout<OurTypes::Stream, CUstream>);
static_assert(SameLayout<OurTypes::Event, CUevent>);
static_assert(SameLayout<OurTypes::PointerAttribute, CUpointer_attribute>);
static_assert(SameLayout<OurTypes::IpcMemHandle, CUipcMemHandle>);
static_assert(sizeof(CUipcMemHandle) == kIpcHandleSize && CU_IPC_HANDLE_SIZE == kIpcHandleSize);

static_assert(CUDA_SUCCESS == kSuccess && CUDA_ERROR_INVALID_VALUE == kErrorInvalidValue);
static_assert(CUDA_ERROR_NO_DEVICE == kErrorNoDevice && CUDA_ERROR_NOT_READY == kErrorNotReady);
static_assert(CU_POINTER_ATTRIBUTE_MEMORY_TYPE == kAttrMemoryType);
static_assert(CU_POINTER_ATTRIBUTE_IS_MANAGED == kAttrIsManaged);
static_assert(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == kAttrDeviceOrdinal);
static_assert(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE == kAttrLegacyIpcCapable);
static_assert(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR == kAttrRangeStart);
static_assert(CU_POINTER_ATTRIBUTE_RANGE_SIZE == kAttrRangeSize);
static_assert(CU_MEMORYTYPE_HOST == kMemoryTypeHost && CU_MEMORYTYPE_DEVICE == kMemoryTypeDevice);
static_assert(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS == kIpcLazyPeerAccess);
static_assert(CU_STREAM_NON_BLOCKING == kStreamNonBlocking && CU_EVENT_DISABLE_TIMING == kEventDisableTiming);
static_assert(CU_MEMHOSTREGISTER_PORTABLE == kHostRegisterPortable);

// cuda.h's name for a function, after its macros (cuMemcpyDtoH ->
// cuMemcpyDtoH_v2), must be the symbol we look up.
#define HIXL_STR2(x) #x
#define HIXL_STR(x) HIXL_STR2(x)
#define HIXL_CHECK_FN(name, symbol)                                                        \
  static_assert(std::is_same_v<Api<CudaHTypes>::name, decltype(&::cu##name)>,              \
                "cuda_api.h: cu" #name " has another type in cuda.h");                    \
  static_assert(std::string_view(HIXL_STR(cu##name)) == std::string_view(symbol),          \
                "cuda_api.h: cu" #name " is exported as another symbol in cuda.h");
HIXL_CUDA_FUNCTIONS(HIXL_CHECK_FN)

}  // namespace
}  // namespace hixl::cuda
