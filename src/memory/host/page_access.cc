#include "memory/host/page_access.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/log.h"
#include "memory/host/proc_maps.h"

namespace hixl {

AccessMap AccessMap::Of(uintptr_t addr, size_t len) {
  AccessMap m;
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  if (len == 0) {
    m.whole_ = kPageRead | kPageWrite;
    return m;
  }
  // A process has at most some tens of thousands of lines, and this runs
  // once per region (see Registry::Allows).
  const bool ok = ForEachMapping([&](const Mapping &mp) {
    if (mp.lo >= end) return false;  // in address order: nothing more of ours
    const unsigned access = (mp.read ? kPageRead : 0u) | (mp.write ? kPageWrite : 0u);
    if (mp.hi > addr) m.spans_.push_back({std::max<uint64_t>(mp.lo, addr), std::min<uint64_t>(mp.hi, end), access});
    return true;
  });
  if (!ok) {
    HIXL_LOGW("cannot open /proc/self/maps (%s): the access of registered memory is not checked",
              std::strerror(errno));
    m.spans_.assign(1, {addr, end, kPageRead | kPageWrite});
    m.whole_ = kPageRead | kPageWrite;
    return m;
  }
  m.whole_ = m.Access(addr, len);
  return m;
}

unsigned AccessMap::Access(uintptr_t addr, size_t len) const {
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  // From the last span starting at or before addr.
  auto it = std::upper_bound(spans_.begin(), spans_.end(), static_cast<uint64_t>(addr),
                             [](uint64_t a, const Span &s) { return a < s.lo; });
  if (it != spans_.begin()) --it;
  unsigned access = kPageRead | kPageWrite;
  for (uint64_t cursor = addr; cursor < end; cursor = it->hi) {
    // (Spans wholly behind the cursor: a line read twice while the maps changed.)
    while (it != spans_.end() && it->hi <= cursor) ++it;
    if (it == spans_.end() || it->lo > cursor) return 0;  // a hole
    access &= it->access;
  }
  return access;
}

unsigned RangeAccess(uintptr_t addr, size_t len) { return AccessMap::Of(addr, len).whole(); }

namespace {

constexpr size_t kProbeBatch = 1024;  // IOV_MAX: iovecs per process_vm_* call
// What probing costs a page: a call ~0.6 us, then ~0.25 us a page to read,
// ~0.45 to read and write back. One read of /proc/self/maps costs ~25 us in
// a small process, some ms with tens of thousands of mappings; the last one
// timed says how many pages are worth probing instead (at least 64). (The
// memcpy the check guards costs ~0.3 us a page here.)
constexpr int64_t kProbeNsPerPage = 500;
constexpr size_t kMinProbePages = 64;
std::atomic<int64_t> g_maps_ns{25000};  // the last read of the maps, timed
std::atomic<uint64_t> g_maps_reads{0};

// How many of the n one-byte probes in remote[] succeeded, in order (n: all);
// -1 when this process may not use process_vm_* (seccomp, no kernel support).
ssize_t Probe(const iovec *remote, size_t n, unsigned need) {
  char bytes[kProbeBatch];
  iovec local{bytes, n};
  const pid_t self = getpid();
  // The calls stop at the first element they cannot copy and return what
  // they copied before it (a fault on the first is EFAULT).
  ssize_t got = process_vm_readv(self, &local, 1, remote, n, 0);
  if (got < 0) return errno == EFAULT ? 0 : -1;
  if (!(need & kPageWrite) || got == 0) return got;
  local.iov_len = static_cast<size_t>(got);  // write back exactly what was read
  ssize_t put = process_vm_writev(self, &local, 1, remote, static_cast<size_t>(got), 0);
  if (put < 0) return errno == EFAULT ? 0 : -1;
  return put;
}

size_t FirstInaccessibleByMap(const MemRange *ranges, size_t n, unsigned need) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, ranges[i].addr);
    hi = std::max(hi, ranges[i].addr + ranges[i].len);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const AccessMap map = AccessMap::Of(lo, hi - lo);
  g_maps_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count(),
                  std::memory_order_relaxed);
  g_maps_reads.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    if ((map.Access(ranges[i].addr, ranges[i].len) & need) != need) return i;
  }
  return n;
}

// One byte inside the ranges on each distinct page they touch (the first
// byte of a range, then the first of each later page of it; ascending, one a
// page) into *probes; false when there are more than `limit` pages. The
// byte must be ours to write back: one outside the ranges may be another
// thread's, mid-update.
bool ProbeBytes(const MemRange *ranges, size_t n, uintptr_t page, size_t limit, std::vector<uintptr_t> *probes) {
  auto compact = [probes, page] {
    std::sort(probes->begin(), probes->end());
    probes->erase(std::unique(probes->begin(), probes->end(),
                              [page](uintptr_t a, uintptr_t b) { return a / page == b / page; }),
                  probes->end());
  };
  for (size_t i = 0; i < n; ++i) {
    if (ranges[i].len == 0) continue;
    const uintptr_t end = ranges[i].addr + ranges[i].len;
    if ((end - 1) / page - ranges[i].addr / page >= limit) return false;
    for (uintptr_t at = ranges[i].addr; at < end; at = (at / page + 1) * page) {
      // (Batches are mostly ascending: most repeats are the previous page.)
      if (probes->empty() || probes->back() / page != at / page) probes->push_back(at);
    }
    if (probes->size() > 2 * limit) {
      compact();
      if (probes->size() > limit) return false;
    }
  }
  compact();
  return probes->size() <= limit;
}

// The pages of `probes` (see ProbeBytes) that may not be touched as `need`
// says, by page number into *bad (ascending); false when process_vm_* is not
// allowed.
bool ProbePages(const std::vector<uintptr_t> &probes, uintptr_t page, unsigned need, std::vector<uintptr_t> *bad) {
  iovec remote[kProbeBatch];
  for (size_t from = 0; from < probes.size();) {
    const size_t count = std::min(kProbeBatch, probes.size() - from);
    for (size_t k = 0; k < count; ++k) remote[k] = {reinterpret_cast<void *>(probes[from + k]), 1};
    const ssize_t ok = Probe(remote, count, need);
    if (ok < 0) return false;
    from += static_cast<size_t>(ok);
    if (static_cast<size_t>(ok) < count) bad->push_back(probes[from++] / page);  // and go on after it
  }
  return true;
}

}  // namespace

uint64_t MapsReadsForTest() { return g_maps_reads.load(); }

size_t FirstInaccessible(const MemRange *ranges, size_t n, unsigned need) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  static std::atomic<bool> cannot_probe{false};
  if (need == 0 || n == 0) return n;
  const size_t limit =
      std::max<size_t>(kMinProbePages, static_cast<size_t>(g_maps_ns.load(std::memory_order_relaxed) / kProbeNsPerPage));
  std::vector<uintptr_t> probes, bad;
  if (cannot_probe.load(std::memory_order_relaxed) || !ProbeBytes(ranges, n, page, limit, &probes)) {
    return FirstInaccessibleByMap(ranges, n, need);
  }
  if (!ProbePages(probes, page, need, &bad)) {
    HIXL_LOGI("process_vm_readv/writev on ourselves not allowed (%s): checking memory access from /proc/self/maps",
              std::strerror(errno));
    cannot_probe.store(true, std::memory_order_relaxed);
    return FirstInaccessibleByMap(ranges, n, need);
  }
  if (bad.empty()) return n;
  // The first range touching a page that failed.
  for (size_t i = 0; i < n; ++i) {
    if (ranges[i].len == 0) continue;
    const uintptr_t first = ranges[i].addr / page, last = (ranges[i].addr + ranges[i].len - 1) / page;
    auto it = std::lower_bound(bad.begin(), bad.end(), first);
    if (it != bad.end() && *it <= last) return i;
  }
  return n;  // (not reached: every page probed belongs to a range)
}

}  // namespace hixl
