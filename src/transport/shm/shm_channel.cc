#include "transport/shm/shm_channel.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "common/fork_fds.h"
#include "common/log.h"
#include "transport/shm/shm_transport.h"

namespace hixl::shm {
namespace {

// Per syscall: at most this many iovecs on either side (UIO_MAXIOV) and this
// many bytes, which bounds how long a revocation waits for a copy in flight.
constexpr size_t kMaxIov = 1024;
constexpr size_t kMaxBytesPerCall = 8u << 20;
// The kernel's copy pins the target's pages one by one and runs at about
// half of memcpy's speed on one thread; a big batch is split across the
// caller and the copy workers so that the copies overlap. Below this size a
// split costs more than it saves.
constexpr size_t kSplitBytes = 1u << 20;
constexpr size_t kMaxShares = 4;

std::atomic<uint64_t> g_mapped_bytes{0};  // MappedBytesForTest

// Cuts `pieces` into `shares` runs of about equal bytes.
std::vector<std::vector<Piece>> Split(const Piece *pieces, size_t n, size_t shares, size_t total) {
  std::vector<std::vector<Piece>> out(shares);
  size_t per = (total + shares - 1) / shares;
  size_t cur = 0, filled = 0;
  for (size_t i = 0; i < n; ++i) {
    Piece p = pieces[i];
    while (p.len > 0) {
      size_t take = std::min(p.len, per - filled);
      out[cur].push_back({p.local, p.remote, take});
      p.local += take;
      p.remote += take;
      p.len -= take;
      filled += take;
      if (filled == per && cur + 1 < shares) {
        ++cur;
        filled = 0;
      }
    }
  }
  return out;
}

}  // namespace

bool ShmChannel::Probe(pid_t pid, std::string *why) {
  // Reading one byte at address 0 of the target: if the kernel lets us in
  // at all, it fails with EFAULT; if not, with EPERM (or ENOSYS, ESRCH).
  char byte;
  iovec local{&byte, 1};
  iovec remote{nullptr, 1};
  ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n < 0 && errno == EFAULT) return true;
  *why = n < 0 ? std::string("process_vm_readv: ") + std::strerror(errno) : std::string("unexpected probe result");
  return false;
}

int ShmChannel::OpenPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  // A pidfd tells reliably when the target exits, so that a recycled pid
  // never receives our bytes.
  // Kept for the link's life: closed in a fork's child (see fork_fds.h).
  return OpenKeptFd([pid] { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); });
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

bool ShmChannel::Exited(int pidfd) {
  if (pidfd < 0) return false;
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, 0) != 0;  // readable: the process has exited
}

ShmChannel::ShmChannel(pid_t pid, int pidfd, const RemoteRegions *regions, std::function<bool()> alive,
                       const std::vector<std::unique_ptr<IoWorker>> *workers)
    : core_(std::make_shared<Core>()), workers_(workers) {
  core_->pid = pid;
  core_->pidfd = pidfd;
  core_->regions = regions;
  core_->alive = std::move(alive);
}

ShmChannel::~ShmChannel() {
  std::vector<const Completion *> all;
  {
    MutexLock lock(&core_->mu);
    for (const auto &j : core_->jobs) all.push_back(j->done.get());
  }
  for (const auto *c : all) core_->Cancel(c);
}

ShmChannel::Core::~Core() { CloseKeptFd(pidfd); }

bool ShmChannel::Core::TargetAlive() const {
  if (closed.load() || !alive()) return false;
  return !Exited(pidfd);
}

void ShmChannel::Close(const char *why) {
  if (!core_->closed.exchange(true)) HIXL_LOGD("shm to pid %d: closed: %s", static_cast<int>(core_->pid), why);
}

bool ShmChannel::broken() const { return core_->closed.load() || !core_->alive(); }

bool ShmChannel::idle() const {
  MutexLock lock(&core_->mu);
  return core_->jobs.empty();
}

void ShmChannel::Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
                        Deadline deadline, bool caller_waits) {
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += pieces[i].len;
  size_t shares = 1;
  if (total >= kSplitBytes) {
    // More shares than cores only adds switching.
    static const size_t cores = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
    shares = std::min({kMaxShares, cores, workers_->size() + (caller_waits ? 1 : 0)});
  }
  std::vector<std::shared_ptr<Job>> jobs;
  for (auto &part : shares > 1 ? Split(pieces, n, shares, total) : std::vector<std::vector<Piece>>{{pieces, pieces + n}}) {
    if (part.empty()) continue;
    auto job = std::make_shared<Job>();
    job->is_write = is_write;
    for (const Piece &p : part) job->bytes += p.len;
    job->pieces = std::move(part);
    job->done = done;
    job->deadline = deadline;
    jobs.push_back(std::move(job));
  }
  done->AddParts(jobs.size());
  {
    MutexLock lock(&core_->mu);
    core_->jobs.insert(core_->jobs.end(), jobs.begin(), jobs.end());
  }
  // The caller would only sleep meanwhile: it copies the first share itself
  // (the loop below).
  for (size_t i = caller_waits ? 1 : 0; i < jobs.size(); ++i) {
    // Spread over the workers: async batches of one share each must not
    // all land on the first.
    IoWorker *w = (*workers_)[next_worker_.fetch_add(1, std::memory_order_relaxed) % workers_->size()].get();
    if (!w->Post([core = core_, job = jobs[i]] { core->Run(job); })) {
      // The engine is finalizing (a transfer raced Finalize): the share
      // fails now rather than leave the batch waiting out its deadline.
      HIXL_LOGE("shm to pid %d: the engine is finalizing; a share of %zu piece(s) fails", core_->pid,
                jobs[i]->pieces.size());
      // Unless a poller took it meanwhile (it is listed already): then the
      // poller finishes it, and it stays listed for Cancel to wait on.
      if (!jobs[i]->claimed.exchange(true)) core_->Drop(jobs[i], FAILED);
    }
  }
  // A waiting caller then runs whatever of its shares no worker has taken
  // yet: queued behind other requests' copies, they would keep it waiting
  // (and time it out) while it sits idle. Run skips shares already taken.
  if (caller_waits) {
    for (const auto &job : jobs) core_->Run(job);
  }
}

void ShmChannel::Core::Run(const std::shared_ptr<Job> &job) {
  if (job->claimed.exchange(true)) return;  // a poller ran it (see Progress)
  Drop(job, Copy(*job));
}

void ShmChannel::Progress() {
  std::shared_ptr<Job> job;
  {
    MutexLock lock(&core_->mu);
    for (const auto &j : core_->jobs) {
      if (!j->claimed.load(std::memory_order_relaxed)) {
        if (j->bytes <= kStealBytes) job = j;
        break;  // the oldest only: requests finish in about the order posted
      }
    }
  }
  if (job != nullptr) core_->Run(job);  // Run claims it, or finds it taken
}

void ShmChannel::Core::Drop(const std::shared_ptr<Job> &job, Status s) {
  {
    MutexLock lock(&mu);
    jobs.remove(job);
  }
  job->done->PartDone(s);
}

Status ShmChannel::Core::Copy(Job &job) {
  iovec local[kMaxIov];
  iovec remote[kMaxIov];
  size_t piece = 0;
  size_t offset = 0;  // into job.pieces[piece]
  while (piece < job.pieces.size()) {
    MutexLock lock(&job.mu);
    if (job.cancelled) return FAILED;
    if (job.deadline.Expired()) {
      HIXL_LOGE("shm to pid %d: not done by the deadline", static_cast<int>(pid));
      return TIMEOUT;
    }
    // Gather one syscall's worth; remote ranges are checked under the hold,
    // and so is the link: a link that closes waits for holds before its
    // socket closes (LinkParams::before_close), since the target takes the
    // end of the stream as the end of our copies. Pieces in a mapped region
    // are copied at once (and count towards the same bound).
    RemoteRegions::Hold hold(*regions);
    if (!TargetAlive()) {
      HIXL_LOGE("shm to pid %d: the target is gone (or the link closed)", static_cast<int>(pid));
      return FAILED;
    }
    // The last region looked up under this hold (its entry cannot change
    // while the hold lives) and its mapping.
    const RemoteRegion *last = nullptr;
    std::shared_ptr<PeerMapping> map;
    size_t n = 0;
    size_t bytes = 0;
    uint64_t mapped = 0;
    while (piece < job.pieces.size() && n < kMaxIov && bytes < kMaxBytesPerCall) {
      const Piece &p = job.pieces[piece];
      size_t take = std::min(p.len - offset, kMaxBytesPerCall - bytes);
      const RemoteRegion *r = hold.Find(p.remote + offset, take);
      if (r == nullptr) {
        // Deregistered since the batch was checked: earlier parts of it may
        // have moved already, so this is a failure, not PARAM_INVALID
        // (which promises that nothing moved).
        HIXL_LOGE("shm to pid %d: remote range 0x%" PRIxPTR "+%zu is no longer registered there",
                  static_cast<int>(pid), p.remote + offset, take);
        return FAILED;
      }
      if (r != last) {
        map = r->sections.empty() ? nullptr : MappingFor(hold, r, p.remote + offset, take);
        last = r;
      }
      if (map != nullptr) {
        uint8_t *there = map->base() + (p.remote + offset - r->range.addr);
        auto *here = reinterpret_cast<uint8_t *>(p.local + offset);
        std::memcpy(job.is_write ? there : here, job.is_write ? here : there, take);
        mapped += take;
      } else {
        local[n] = {reinterpret_cast<void *>(p.local + offset), take};
        remote[n] = {reinterpret_cast<void *>(p.remote + offset), take};
        ++n;
      }
      bytes += take;
      offset += take;
      if (offset == p.len) {
        ++piece;
        offset = 0;
      }
    }
    if (mapped != 0) g_mapped_bytes.fetch_add(mapped, std::memory_order_relaxed);
    if (n == 0) continue;
    size_t want = 0;
    for (size_t i = 0; i < n; ++i) want += local[i].iov_len;
    ssize_t done = job.is_write ? process_vm_writev(pid, local, n, remote, n, 0)
                                : process_vm_readv(pid, local, n, remote, n, 0);
    if (done != static_cast<ssize_t>(want)) {
      // A short copy means a fault part-way: memory unmapped on one side.
      HIXL_LOGE("shm to pid %d: %s moved %zd of %zu bytes: %s", static_cast<int>(pid),
                job.is_write ? "process_vm_writev" : "process_vm_readv", done, want,
                done < 0 ? std::strerror(errno) : "memory not mapped");
      return FAILED;
    }
  }
  return SUCCESS;
}

std::shared_ptr<PeerMapping> ShmChannel::Core::MappingFor(const RemoteRegions::Hold &hold, const RemoteRegion *region,
                                                          uint64_t addr, uint64_t len) {
  MutexLock lock(&maps_mu);
  auto it = maps.find(region);
  if (it != maps.end()) return it->second.map;
  SharedFile f;
  const std::vector<uint8_t> *section = wire::FindSection(region->sections, kWireId);
  if (section == nullptr || !DecodeSharedFile(*section, &f)) return nullptr;  // nothing to map: not listed
  // Drop what the table no longer holds (a table replaced since, or a
  // revocation whose hook ran before the entry was added).
  for (auto e = maps.begin(); e != maps.end();) {
    const auto &r = e->second.region->range;
    e = hold.Find(r.addr, r.len) == e->first ? std::next(e) : maps.erase(e);
  }
  std::string why;
  std::shared_ptr<PeerMapping> map = PeerMapping::Map(pidfd, f, region->range.len, &why);
  if (map == nullptr) {
    HIXL_LOGW_RL("shm to pid %d: region 0x%" PRIx64 "+%" PRIu64 " lives in a file, which cannot be mapped here (%s); "
                 "it is copied with process_vm_*",
                 static_cast<int>(pid), region->range.addr, region->range.len, why.c_str());
  } else {
    HIXL_LOGD("shm to pid %d: region 0x%" PRIx64 "+%" PRIu64 " mapped: copies are memcpy", static_cast<int>(pid),
              region->range.addr, region->range.len);
  }
  maps[region] = {hold.FindShared(addr, len), map};
  return map;
}

void ShmChannel::BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) {
  {
    // The table no longer holds the region and no copy under a hold from
    // before is alive (Revoke waited for them): nothing uses its mapping.
    MutexLock lock(&core_->maps_mu);
    for (auto e = core_->maps.begin(); e != core_->maps.end();) {
      const auto &r = e->second.region->range;
      e = r.addr == region.addr && r.len == region.len ? core_->maps.erase(e) : std::next(e);
    }
  }
  ack();
}

uint64_t ShmChannel::MappedBytesForTest() { return g_mapped_bytes.load(); }

void ShmChannel::Cancel(const Completion *done) { core_->Cancel(done); }

void ShmChannel::Core::Cancel(const Completion *done) {
  std::vector<std::shared_ptr<Job>> hit;
  {
    MutexLock lock(&mu);
    for (const auto &j : jobs) {
      if (j->done.get() == done) hit.push_back(j);
    }
  }
  for (const auto &j : hit) {
    // Waits for the syscall in progress, if any; no later one starts.
    MutexLock lock(&j->mu);
    j->cancelled = true;
  }
}

}  // namespace hixl::shm
