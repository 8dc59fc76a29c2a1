#include "support/fake_cuda/fake_cuda.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

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

// What an IPC handle holds (cuIpcGetMemHandle's 64 opaque bytes).
struct HandleBytes {
  char magic[8];
  uint32_t pid;        // the exporting process
  int32_t fd;          // its memfd there
  uint64_t id;         // the allocation's id there (the memfd's name says it)
  uint64_t len;
  uint64_t va;         // where it lies in the exporter: never where it is opened
  int32_t ordinal;
  uint32_t reserved;
};
static_assert(sizeof(HandleBytes) <= sizeof(hixl::cuda::IpcHandle::bytes));
constexpr char kMagic[8] = {'h', 'i', 'x', 'l', 'f', 'a', 'k', 'e'};

std::string MemfdName(uint32_t pid, uint64_t id) {
  return "hixl-fake-cuda." + std::to_string(pid) + "." + std::to_string(id);
}

bool Overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen) { return a < b + blen && b < a + alen; }

struct FakeEvent {
  int polls_left;
  bool failed;
};

}  // namespace

bool HostAccessible(uintptr_t addr, size_t n, bool write) {
  if (n == 0) return true;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  uint64_t want = addr;  // the first byte not yet seen mapped
  const uint64_t end = addr + n;
  if (end < addr) return false;
  // The lines come in address order.
  while (want < end && std::getline(maps, line)) {
    uint64_t lo = 0, hi = 0;
    char perms[5] = {0};
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %4s", &lo, &hi, perms) != 3) continue;
    if (hi <= want) continue;
    if (lo > want) return false;  // a hole
    if (perms[0] != 'r' || (write && perms[1] != 'w')) return false;
    want = hi;
  }
  return want >= end;
}

FakeCuda::Backing::~Backing() {
  if (bytes != nullptr) munmap(bytes, PageRound(len));
  if (fd >= 0) close(fd);
}

FakeCuda::~FakeCuda() {
  for (auto &[va, m] : maps_) munmap(reinterpret_cast<void *>(va), PageRound(m.len));
}

uintptr_t FakeCuda::Alloc(size_t len, int ordinal) {
  auto b = std::make_shared<Backing>();
  b->len = len;
  b->ordinal = ordinal;
  {
    std::lock_guard<std::mutex> lock(mu_);
    b->id = next_id_++;
  }
  b->fd = memfd_create(MemfdName(static_cast<uint32_t>(getpid()), b->id).c_str(), MFD_CLOEXEC);
  if (b->fd < 0 || ftruncate(b->fd, static_cast<off_t>(PageRound(len))) != 0) return 0;
  void *bytes = mmap(nullptr, PageRound(len), PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
  if (bytes == MAP_FAILED) return 0;
  b->bytes = static_cast<uint8_t *>(bytes);
  uintptr_t va = Reserve(len);
  if (va == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
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
  // Its handle names it no more: the memfd closes (mappings keep the bytes).
  if (b->fd >= 0) close(b->fd);
  b->fd = -1;
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

bool FakeCuda::Write(uintptr_t dev, const void *src, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t *to = Translate(dev, n);
  if (to != nullptr) std::memcpy(to, src, n);
  return to != nullptr;
}

bool FakeCuda::Read(void *dst, uintptr_t dev, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint8_t *from = Translate(dev, n);
  if (from != nullptr) std::memcpy(dst, from, n);
  return from != nullptr;
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
  if (fail_copies || to == nullptr || dev != ordinal ||
      !HostAccessible(reinterpret_cast<uintptr_t>(src), n, false)) {
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
  const uint8_t *from = Translate(src, n, &dev);
  if (fail_copies || from == nullptr || dev != ordinal ||
      !HostAccessible(reinterpret_cast<uintptr_t>(dst), n, true)) {
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
  HandleBytes h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.pid = static_cast<uint32_t>(getpid());
  h.fd = it->second.backing->fd;
  h.id = it->second.backing->id;
  h.len = it->second.len;
  h.va = base;
  h.ordinal = it->second.backing->ordinal;
  std::memset(out->bytes, 0, sizeof(out->bytes));
  std::memcpy(out->bytes, &h, sizeof(h));
  return true;
}

std::shared_ptr<FakeCuda::Backing> FakeCuda::OpenBacking(const hixl::cuda::IpcHandle &handle,
                                                         std::string *why) const {
  HandleBytes h{};
  std::memcpy(&h, handle.bytes, sizeof(h));
  *why = "fake cuIpcOpenMemHandle: CUDA_ERROR_INVALID_HANDLE";
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.len == 0) return nullptr;
  // The exporter's memfd, whichever process it is (this one included).
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(h.pid), 0));
  if (pidfd < 0) {
    *why += std::string(" (the exporting process: ") + std::strerror(errno) + ")";
    return nullptr;
  }
  const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, h.fd, 0));
  const int err = errno;
  close(pidfd);
  if (fd < 0) {
    *why += std::string(" (its memory: ") + std::strerror(err) + "; freed?)";
    return nullptr;
  }
  auto b = std::make_shared<Backing>();
  b->len = h.len;
  b->ordinal = h.ordinal;
  b->id = h.id;
  // That fd number may hold another file by now (the allocation freed): the
  // memfd's name says which allocation it is.
  char link[256] = {0};
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
  struct stat st {};
  if (n <= 0 || std::string(link, static_cast<size_t>(n)).rfind("/memfd:" + MemfdName(h.pid, h.id) + " ", 0) != 0 ||
      fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < h.len) {
    close(fd);
    *why += " (that allocation is gone)";
    return nullptr;
  }
  void *bytes = mmap(nullptr, PageRound(h.len), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (bytes == MAP_FAILED) return nullptr;
  b->bytes = static_cast<uint8_t *>(bytes);
  return b;
}

bool FakeCuda::IpcOpen(int, const hixl::cuda::IpcHandle &handle, uintptr_t *base, std::string *why) {
  std::shared_ptr<Backing> b = OpenBacking(handle, why);
  if (b == nullptr) return false;
  HandleBytes h{};
  std::memcpy(&h, handle.bytes, sizeof(h));
  // Never at the exporter's address, where a caller mixing the two up
  // would go unnoticed.
  std::vector<uintptr_t> unlucky;
  uintptr_t va = Reserve(b->len);
  while (va != 0 && Overlaps(va, PageRound(b->len), h.va, PageRound(h.len)) && unlucky.size() < 8) {
    unlucky.push_back(va);
    va = Reserve(b->len);
  }
  for (uintptr_t u : unlucky) munmap(reinterpret_cast<void *>(u), PageRound(b->len));
  if (va == 0 || Overlaps(va, PageRound(b->len), h.va, PageRound(h.len))) {
    *why = "fake cuIpcOpenMemHandle: CUDA_ERROR_OUT_OF_MEMORY";
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  maps_[va] = Mapping{va, b->len, b, true};
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
// Each end is this process's device memory (its own or opened by IPC) or
// host memory it may read (the source) or write (the destination).
bool FakeCuda::CopyAsync(int, uintptr_t dst, uintptr_t src, size_t n, hixl::cuda::Stream, std::string *why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_copies) {
    *why = "fake cuMemcpyAsync: CUDA_ERROR_LAUNCH_FAILED";
    return false;
  }
  uint8_t *to = Translate(dst, n);
  const uint8_t *from = Translate(src, n);
  const bool bad_dst = to == nullptr && !HostAccessible(dst, n, true);
  const bool bad_src = !bad_dst && from == nullptr && !HostAccessible(src, n, false);
  if (bad_dst || bad_src) {
    char b[160];
    std::snprintf(b, sizeof(b),
                  "fake cuMemcpyAsync: CUDA_ERROR_INVALID_VALUE (%s 0x%" PRIxPTR "+%zu is not memory of this process)",
                  bad_dst ? "destination" : "source", bad_dst ? dst : src, n);
    *why = b;
    return false;
  }
  std::memmove(to != nullptr ? to : reinterpret_cast<uint8_t *>(dst),
               from != nullptr ? from : reinterpret_cast<const uint8_t *>(src), n);
  ++async_copies;
  return true;
}

bool FakeCuda::EventRecord(int, hixl::cuda::Stream, hixl::cuda::Event *out, std::string *) {
  *out = new FakeEvent{pending_polls.load(), false};
  ++events_;
  return true;
}

hixl::cuda::EventState FakeCuda::EventQuery(int, hixl::cuda::Event e, std::string *) {
  auto *ev = static_cast<FakeEvent *>(e);
  ++event_queries;
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
