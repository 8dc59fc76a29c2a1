// fake_cuda.h: a CUDA driver for tests on machines without a GPU, behind the
// same interface (device/cuda/cuda_driver.h) the real libcuda calls are.
//
// One FakeCuda is one process's view of the GPU, as the real driver is: a
// device address means something only in the process that allocated it,
// or that opened it by IPC handle. A fake device allocation is an address
// range this process cannot touch (PROT_NONE, as a GPU's memory is to the
// CPU) whose bytes live in a memfd mapped elsewhere: code that memcpy's or
// sends from "device" memory instead of going through the driver faults or
// gets EFAULT, as it would on a GPU. An IPC handle names the exporting
// process and its memfd; opening it (in another process, or in this one)
// maps the same bytes at a new untouchable address, never the exporter's.
// A copy whose ends are neither this process's device memory nor host memory
// it may read (source) or write (destination) fails, as the real driver's
// does: a copy to the address a peer's allocation has in the peer's process
// is such a copy. (tests/support/fake_cuda/fake_libcuda.cc puts one FakeCuda
// per process behind libcuda.so.1's C API, so that the two-process GPU tests
// run against it.)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "device/cuda/cuda_driver.h"

namespace hixl_test {

class FakeCuda final : public hixl::cuda::Driver {
 public:
  FakeCuda() = default;
  ~FakeCuda() override;

  // A device allocation of `len` bytes on device `ordinal`; 0 on failure.
  uintptr_t Alloc(size_t len, int ordinal = 0);
  // Frees an allocation (not an IPC mapping); false if unknown.
  bool Free(uintptr_t base);
  // The test's own access to device bytes (false: not device memory here).
  bool Write(uintptr_t dev, const void *src, size_t n);
  bool Read(void *dst, uintptr_t dev, size_t n);

  // Counters and knobs.
  std::atomic<int> copies_to_device{0};
  std::atomic<int> copies_from_device{0};
  std::atomic<int> async_copies{0};
  std::atomic<int> ipc_opens{0};
  std::atomic<int> ipc_closes{0};
  std::atomic<int> event_queries{0};
  std::atomic<int> pinned{0};
  std::atomic<bool> fail_copies{false};  // every copy fails
  std::atomic<int> pending_polls{0};     // an event reports pending this many times first
  std::atomic<bool> hold_events{false};  // every event reports pending meanwhile
  int open_mappings() const;             // IPC mappings not closed

  std::string Describe() const override { return "fake CUDA driver (tests)"; }
  bool Query(uintptr_t addr, hixl::cuda::PointerInfo *out, std::string *why) override;
  bool CopyToDevice(int ordinal, uintptr_t dst, const void *src, size_t n, std::string *why) override;
  bool CopyFromDevice(int ordinal, void *dst, uintptr_t src, size_t n, std::string *why) override;
  bool PinHost(void *p, size_t n, std::string *why) override;
  void UnpinHost(void *p) override;
  bool IpcExport(int ordinal, uintptr_t base, hixl::cuda::IpcHandle *out, std::string *why) override;
  bool IpcOpen(int ordinal, const hixl::cuda::IpcHandle &handle, uintptr_t *base, std::string *why) override;
  bool IpcClose(int ordinal, uintptr_t base, std::string *why) override;
  bool StreamCreate(int ordinal, hixl::cuda::Stream *out, std::string *why) override;
  void StreamDestroy(int ordinal, hixl::cuda::Stream s) override;
  bool CopyAsync(int ordinal, uintptr_t dst, uintptr_t src, size_t n, hixl::cuda::Stream s,
                 std::string *why) override;
  bool EventRecord(int ordinal, hixl::cuda::Stream s, hixl::cuda::Event *out, std::string *why) override;
  hixl::cuda::EventState EventQuery(int ordinal, hixl::cuda::Event e, std::string *why) override;
  void EventDestroy(int ordinal, hixl::cuda::Event e) override;
  int live_streams() const { return streams_.load(); }
  int live_events() const { return events_.load(); }

 private:
  // An allocation's bytes: a memfd, mapped read-write here. Allocations own
  // theirs; an IPC mapping has its own mapping of the exporter's memfd, so
  // the bytes outlive a Free while it is open (as with cudaFree).
  struct Backing {
    ~Backing();
    uint8_t *bytes = nullptr;
    size_t len = 0;
    int ordinal = 0;
    uint64_t id = 0;
    int fd = -1;  // the memfd (allocations only: what an IPC handle names)
  };
  struct Mapping {
    uintptr_t va = 0;
    size_t len = 0;
    std::shared_ptr<Backing> backing;
    bool ipc = false;  // opened from a handle
  };
  // The host address of this process's device bytes [addr, addr+n), or
  // nullptr (not device memory here, or crossing an allocation's end).
  uint8_t *Translate(uintptr_t addr, size_t n, int *ordinal = nullptr) const;
  // Maps the memfd an IPC handle names (its process's, by pidfd_getfd).
  std::shared_ptr<Backing> OpenBacking(const hixl::cuda::IpcHandle &handle, std::string *why) const;

  mutable std::mutex mu_;
  std::map<uintptr_t, Mapping> maps_;                   // by va
  std::map<uint64_t, std::shared_ptr<Backing>> allocs_;  // live allocations by id
  uint64_t next_id_ = 1;
  std::atomic<int> streams_{0};
  std::atomic<int> events_{0};
};

// Whether this process may read (and, with `write`, write) every byte of
// [addr, addr+n), as /proc/self/maps says.
bool HostAccessible(uintptr_t addr, size_t n, bool write);

// Puts a FakeCuda in place of libcuda for a scope.
class FakeCudaScope {
 public:
  FakeCudaScope() { hixl::cuda::SetDriverForTesting(&fake_); }
  ~FakeCudaScope() { hixl::cuda::SetDriverForTesting(nullptr); }
  FakeCuda &fake() { return fake_; }

 private:
  FakeCuda fake_;
};

}  // namespace hixl_test
