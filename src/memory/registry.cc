#include "memory/registry.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "common/deadline.h"
#include "common/log.h"
#include "memory/range_search.h"

namespace hixl {
namespace {

// One process-wide condition for "a revoked region lost a pin": deregistration
// is rare, so sharing it costs nothing and keeps Region small. Never
// destroyed, and made anew in the child of a fork(): a parent thread may hold
// the lock there, or be counted as waiting (which made the child's exit wait
// for ever in the condition variable's destructor).
struct Unpin {
  Mutex mu;  // guards nothing: the pin counts are atomics; it orders the wake-ups
  CondVar cv;
};
Unpin *g_unpin = new Unpin();
const int g_unpin_atfork = pthread_atfork(nullptr, nullptr, [] { g_unpin = new Unpin(); });

}  // namespace

RegionTable::RegionTable(std::vector<std::shared_ptr<Region>> regions, uint64_t generation)
    : regions_(std::move(regions)), generation_(generation) {
  std::sort(regions_.begin(), regions_.end(), [](const auto &a, const auto &b) {
    return a->addr != b->addr ? a->addr < b->addr : a->len < b->len;
  });
  max_end_.reserve(regions_.size());
  uint64_t m = 0;
  for (const auto &r : regions_) {
    m = std::max<uint64_t>(m, r->end());
    max_end_.push_back(m);
  }
}

RegionTable::Ref RegionTable::Find(uintptr_t addr, size_t len, Ref hint) const {
  if (len == 0) return nullptr;
  if (hint != nullptr && (*hint)->Contains(addr, len)) return hint;
  size_t i = FindContaining(
      regions_, max_end_, addr, len, [](const std::shared_ptr<Region> &r) { return r->addr; },
      [](const std::shared_ptr<Region> &r, uint64_t a, uint64_t n) { return r->Contains(a, n); });
  return i == SIZE_MAX ? nullptr : &regions_[i];
}

wire::RegionPage RegionTable::Page(uint32_t first, size_t max_bytes) const {
  wire::RegionPage page;
  page.generation = generation_;
  page.total = static_cast<uint32_t>(regions_.size());
  page.first = std::min<uint32_t>(first, page.total);
  size_t bytes = 0;
  for (size_t i = page.first; i < regions_.size(); ++i) {
    const Region &r = *regions_[i];
    wire::RegionEntry e;
    e.range = {r.addr, r.len};
    e.kind = r.memory->wire_kind();
    e.sections = r.sections;
    bytes += wire::RegionEntryBytes(e);
    if (bytes > max_bytes && !page.entries.empty()) break;
    page.entries.push_back(std::move(e));
  }
  page.count = static_cast<uint32_t>(page.entries.size());
  return page;
}

PinSet &PinSet::operator=(PinSet &&other) noexcept {
  if (this != &other) {
    Release();
    pinned_ = std::move(other.pinned_);
  }
  return *this;
}

bool PinSet::Add(const std::shared_ptr<Region> &r) {
  if (Holds(r.get())) return true;
  r->pins.fetch_add(1);
  if (r->revoked.load()) {
    if (r->pins.fetch_sub(1) == 1) Registry::NotifyUnpinned();
    return false;
  }
  pinned_.push_back(r);
  return true;
}

bool PinSet::Holds(const Region *r) const {
  for (const auto &p : pinned_) {
    if (p.get() == r) return true;
  }
  return false;
}

bool PinSet::AnyRevoked() const {
  for (const auto &p : pinned_) {
    if (p->revoked.load(std::memory_order_relaxed)) return true;
  }
  return false;
}

void PinSet::Release() {
  for (const auto &p : pinned_) {
    if (p->pins.fetch_sub(1) == 1 && p->revoked.load()) Registry::NotifyUnpinned();
  }
  pinned_.clear();
}

void Registry::NotifyUnpinned() {
  MutexLock lock(&g_unpin->mu);
  g_unpin->cv.NotifyAll();
}

Status Registry::Register(uintptr_t addr, size_t len, const MemoryKind &memory, const Prepare &prepare,
                          MemHandle *handle) {
  MutexLock serial(&register_mu_);
  {
    MutexLock lock(&mu_);
    auto same = by_range_.find({addr, len});
    if (same != by_range_.end()) {
      *handle = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(same->second));
      return SUCCESS;
    }
    if (by_id_.size() >= max_regions_) {
      HIXL_LOGE("RegisterMem: %zu regions already registered, the engine's cap (max_regions); addr=0x%lx len=%zu",
                by_id_.size(), static_cast<unsigned long>(addr), len);
      return RESOURCE_EXHAUSTED;
    }
  }
  auto r = std::make_shared<Region>();
  // Handles are unique in the process, not only in this engine: a stale
  // handle, or one of another engine, then never names a live region here.
  static std::atomic<uint64_t> next_id{1};
  r->id = next_id.fetch_add(1, std::memory_order_relaxed);
  r->addr = addr;
  r->len = len;
  r->memory = &memory;
  if (prepare) {
    Status s = prepare(*r);
    if (s != SUCCESS) return s;
  }
  MutexLock lock(&mu_);
  ++generation_;
  by_id_[r->id] = r;
  by_range_[{addr, len}] = r->id;
  dirty_ = true;
  *handle = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(r->id));
  return SUCCESS;
}

void Registry::Deregister(MemHandle handle) {
  if (auto r = Revoke(handle)) WaitUnpinned(*r);
}

std::shared_ptr<Region> Registry::Revoke(MemHandle handle) {
  MutexLock lock(&mu_);
  auto it = by_id_.find(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)));
  if (it == by_id_.end()) {
    HIXL_LOGI("DeregisterMem: handle %p is not registered; nothing to do", handle);
    return nullptr;
  }
  std::shared_ptr<Region> r = it->second;
  by_id_.erase(it);
  by_range_.erase({r->addr, r->len});
  ++generation_;
  dirty_ = true;
  // Revoke under the lock: a later Snapshot cannot hand the region out.
  r->revoked.store(true);
  return r;
}

void Registry::WaitUnpinned(const Region &r) {
  auto last_log = std::chrono::steady_clock::now();
  Unpin *unpin = g_unpin;
  UniqueLock lock(&unpin->mu);
  while (r.pins.load() != 0) {
    // The timed wait also covers an unpin that raced with revoked=true.
    unpin->cv.WaitFor(lock, std::chrono::milliseconds(5));
    if (std::chrono::steady_clock::now() - last_log > std::chrono::seconds(1)) {
      HIXL_LOGW("DeregisterMem: region 0x%lx+%zu still has %ld transfer(s) in flight; waiting",
                static_cast<unsigned long>(r.addr), r.len, static_cast<long>(r.pins.load()));
      last_log = std::chrono::steady_clock::now();
    }
  }
}

std::shared_ptr<const RegionTable> Registry::Snapshot() const {
  MutexLock lock(&mu_);
  if (dirty_) Rebuild();
  return table_;
}

size_t Registry::size() const {
  MutexLock lock(&mu_);
  return by_id_.size();
}

void Registry::Rebuild() const {
  std::vector<std::shared_ptr<Region>> all;
  all.reserve(by_id_.size());
  for (const auto &[id, r] : by_id_) all.push_back(r);
  table_ = std::make_shared<RegionTable>(std::move(all), generation_);
  dirty_ = false;
}

}  // namespace hixl
