// cuda_driver.h: what hixl asks of the CUDA driver, as an interface. The
// real one (cuda_driver.cc) calls libcuda.so.1, loaded at run time; tests
// put a fake in its place (tests/support/fake_cuda), so that everything
// above this line -- registration, staging, the IPC handle cache -- runs in
// CI on machines without a GPU, through the same calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hixl::cuda {

// What the driver says about an address.
struct PointerInfo {
  bool device = false;       // device memory (cuMemAlloc, a caching allocator's block, VMM)
  bool managed = false;      // managed memory (host-accessible: register it as MEM_HOST)
  int ordinal = -1;          // the device it lives on
  uintptr_t base = 0;        // the allocation holding it (cuMemGetAddressRange)
  size_t size = 0;
  bool ipc_capable = false;  // a legacy IPC handle can export it (not VMM memory)
};

struct IpcHandle {
  unsigned char bytes[64];
};

using Stream = void *;
using Event = void *;
enum class EventState { kDone, kPending, kFailed };

class Driver {
 public:
  virtual ~Driver() = default;
  // For logs: "libcuda.so.1, driver 13000, 2 devices" or "fake".
  virtual std::string Describe() const = 0;

  // What `addr` is. False (with why) only when the driver failed; plain
  // host memory is `true` with device == false.
  virtual bool Query(uintptr_t addr, PointerInfo *out, std::string *why) = 0;
  // Synchronous copies between device memory (of device `ordinal`) and host
  // memory (staging).
  virtual bool CopyToDevice(int ordinal, uintptr_t dst, const void *src, size_t n, std::string *why) = 0;
  virtual bool CopyFromDevice(int ordinal, void *dst, uintptr_t src, size_t n, std::string *why) = 0;
  // Page-locks host memory (staging buffers), so that copies run at full speed.
  virtual bool PinHost(void *p, size_t n, std::string *why) = 0;
  virtual void UnpinHost(void *p) = 0;

  // Legacy IPC: a handle of an allocation's base, opened in another process
  // (same host) as an address of its own; closed before the memory may go.
  virtual bool IpcExport(int ordinal, uintptr_t base, IpcHandle *out, std::string *why) = 0;
  virtual bool IpcOpen(int ordinal, const IpcHandle &handle, uintptr_t *base, std::string *why) = 0;
  virtual bool IpcClose(int ordinal, uintptr_t base, std::string *why) = 0;

  // Asynchronous copies on a stream of our own; completion by events that
  // are polled, never waited on.
  virtual bool StreamCreate(int ordinal, Stream *out, std::string *why) = 0;
  virtual void StreamDestroy(int ordinal, Stream s) = 0;
  // dst and src: device addresses of `ordinal` (ours or opened by IPC) or
  // host memory (unified addressing).
  virtual bool CopyAsync(int ordinal, uintptr_t dst, uintptr_t src, size_t n, Stream s, std::string *why) = 0;
  // An event recorded on `s` after what was queued so far.
  virtual bool EventRecord(int ordinal, Stream s, Event *out, std::string *why) = 0;
  virtual EventState EventQuery(int ordinal, Event e, std::string *why) = 0;
  virtual void EventDestroy(int ordinal, Event e) = 0;
};

// The driver: libcuda.so.1's, loaded and initialised on the first call (once
// per process), or the one a test set. nullptr, with the reason in *why,
// where there is none (no libcuda.so.1, no GPU, a stub library).
Driver *GetDriver(std::string *why);
// The driver only if GetDriver loaded it already (a MEM_DEVICE
// registration did) or a test set one: a MEM_HOST registration asks it
// whether the range is device memory without loading CUDA into a process
// that has none. Takes no lock (fork-safe).
Driver *DriverIfLoaded();
// Tests: use `d` instead of libcuda's (nullptr: back to the real one).
void SetDriverForTesting(Driver *d);

}  // namespace hixl::cuda
