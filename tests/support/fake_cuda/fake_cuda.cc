#include "support/fake_cuda/fake_cuda.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace hixl_test {
namespace {

size_t PageRound(size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

// An address range nobody may touch.
uintptr_t Reserve(size_t len) {
  void *p = mmap(nullptr, PageRound(len), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? 0 : reinterpret_cast<uintptr_t>(p);
}

struct FakeEvent {
  int polls_left;
  bool failed;
};

}  // namespace

FakeCuda::~FakeCuda() {
  for (auto &[va, m] : maps_) munmap(reinterpret_cast<void *>(va), PageRound(m.len));
  for (auto &[id, b] : allocs_) munmap(b->bytes, PageRound(b->len));
}

uintptr_t FakeCuda::Alloc(size_t len, int ordinal) {
  auto b = std::make_shared<Backing>();
  void *bytes = mmap(nullptr, PageRound(len), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (bytes == MAP_FAILED) return 0;
  b->bytes = static_cast<uint8_t *>(bytes);
  b->len = len;
  b->ordinal = ordinal;
  uintptr_t va = Reserve(len);
  if (va == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  b->id = next_id_++;
  allocs_[b->id] = b;
  maps_[va] = Mapping{va, len, b, false};
  return va;
}

bool FakeCuda::Free(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(base);
  if (it == maps_.end() || it->second.ipc) return false;
  auto b = it->second.backing;
  munmap(reinterpret_cast<void *>(base), PageRound(it->second.len));
  maps_.erase(it);
  allocs_.erase(b->id);
  // (The bytes stay while an IPC mapping holds them, as with cudaFree.)
  return true;
}

uint8_t *FakeCuda::Translate(uintptr_t addr, size_t n, int *ordinal) const {
  auto it = maps_.upper_bound(addr);
  if (it == maps_.begin()) return nullptr;
  --it;
  const Mapping &m = it->second;
  if (addr - m.va >= m.len || n > m.len - (addr - m.va)) return nullptr;
  if (ordinal != nullptr) *ordinal = m.backing->ordinal;
  return m.backing->bytes + (addr - m.va);
}

uint8_t *FakeCuda::Resolve(uintptr_t addr, size_t n) const {
  uint8_t *dev = Translate(addr, n);
  return dev != nullptr ? dev : reinterpret_cast<uint8_t *>(addr);
}

void FakeCuda::Write(uintptr_t dev, const void *src, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  std::memcpy(Translate(dev, n), src, n);
}

void FakeCuda::Read(void *dst, uintptr_t dev, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  std::memcpy(dst, Translate(dev, n), n);
}

int FakeCuda::open_mappings() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto &[va, m] : maps_) n += m.ipc ? 1 : 0;
  return n;
}

bool FakeCuda::Query(uintptr_t addr, hixl::cuda::PointerInfo *out, std::string *) {
  std::lock_guard<std::mutex> lock(mu_);
  *out = hixl::cuda::PointerInfo{};
  auto it = maps_.upper_bound(addr);
  if (it == maps_.begin()) return true;
  --it;
  const Mapping &m = it->second;
  if (addr - m.va >= m.len) return true;
  out->device = true;
  out->ordinal = m.backing->ordinal;
  out->base = m.va;
  out->size = m.len;
  out->ipc_capable = true;
  return true;
}

bool FakeCuda::CopyToDevice(int ordinal, uintptr_t dst, const void *src, size_t n, std::string *why) {
  std::lock_guard<std::mutex> lock(mu_);
  int dev = -1;
  uint8_t *to = Translate(dst, n, &dev);
  if (fail_copies || to == nullptr || dev != ordinal) {
    *why = "fake cuMemcpyHtoD: CUDA_ERROR_INVALID_VALUE";
    return false;
  }
  std::memcpy(to, src, n);
  ++copies_to_device;
  return true;
}

bool FakeCuda::CopyFromDevice(int ordinal, void *dst, uintptr_t src, size_t n, std::string *why) {
  std::lock_guard<std::mutex> lock(mu_);
  int dev = -1;
  uint8_t *from = Translate(src, n, &dev);
  if (fail_copies || from == nullptr || dev != ordinal) {
    *why = "fake cuMemcpyDtoH: CUDA_ERROR_INVALID_VALUE";
    return false;
  }
  std::memcpy(dst, from, n);
  ++copies_from_device;
  return true;
}

bool FakeCuda::PinHost(void *, size_t, std::string *) {
  ++pinned;
  return true;
}

void FakeCuda::UnpinHost(void *) { --pinned; }

bool FakeCuda::IpcExport(int, uintptr_t base, hixl::cuda::IpcHandle *out, std::string *why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(base);
  if (it == maps_.end() || it->second.ipc) {
    *why = "fake cuIpcGetMemHandle: not an allocation's base";
    return false;
  }
  std::memset(out->bytes, 0, sizeof(out->bytes));
  std::memcpy(out->bytes, &it->second.backing->id, sizeof(uint64_t));
  return true;
}

bool FakeCuda::IpcOpen(int, const hixl::cuda::IpcHandle &handle, uintptr_t *base, std::string *why) {
  uint64_t id = 0;
  std::memcpy(&id, handle.bytes, sizeof(id));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = allocs_.find(id);
  if (it == allocs_.end()) {
    *why = "fake cuIpcOpenMemHandle: CUDA_ERROR_INVALID_HANDLE";
    return false;
  }
  uintptr_t va = Reserve(it->second->len);
  maps_[va] = Mapping{va, it->second->len, it->second, true};
  *base = va;
  ++ipc_opens;
  return true;
}

bool FakeCuda::IpcClose(int, uintptr_t base, std::string *why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(base);
  if (it == maps_.end() || !it->second.ipc) {
    *why = "fake cuIpcCloseMemHandle: not an IPC mapping";
    return false;
  }
  munmap(reinterpret_cast<void *>(base), PageRound(it->second.len));
  maps_.erase(it);
  ++ipc_closes;
  return true;
}

bool FakeCuda::StreamCreate(int, hixl::cuda::Stream *out, std::string *) {
  *out = new int(0);
  ++streams_;
  return true;
}

void FakeCuda::StreamDestroy(int, hixl::cuda::Stream s) {
  delete static_cast<int *>(s);
  --streams_;
}

// Copies at once; the event then reports pending `pending_polls` times.
bool FakeCuda::CopyAsync(int, uintptr_t dst, uintptr_t src, size_t n, hixl::cuda::Stream, std::string *why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_copies) {
    *why = "fake cuMemcpyAsync: CUDA_ERROR_LAUNCH_FAILED";
    return false;
  }
  std::memmove(Resolve(dst, n), Resolve(src, n), n);
  return true;
}

bool FakeCuda::EventRecord(int, hixl::cuda::Stream, hixl::cuda::Event *out, std::string *) {
  *out = new FakeEvent{pending_polls.load(), false};
  ++events_;
  return true;
}

hixl::cuda::EventState FakeCuda::EventQuery(int, hixl::cuda::Event e, std::string *) {
  auto *ev = static_cast<FakeEvent *>(e);
  if (hold_events) return hixl::cuda::EventState::kPending;
  if (ev->polls_left > 0) {
    --ev->polls_left;
    return hixl::cuda::EventState::kPending;
  }
  return hixl::cuda::EventState::kDone;
}

void FakeCuda::EventDestroy(int, hixl::cuda::Event e) {
  delete static_cast<FakeEvent *>(e);
  --events_;
}

}  // namespace hixl_test
