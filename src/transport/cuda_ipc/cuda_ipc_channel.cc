#include "transport/cuda_ipc/cuda_ipc_channel.h"

#include <chrono>

#include "common/log.h"
#include "transport/cuda_ipc/ipc_section.h"

namespace hixl::cuda_ipc {
namespace {

constexpr auto kPollPause = std::chrono::microseconds(20);
constexpr auto kCopyLimit = std::chrono::seconds(10);

}  // namespace

CudaIpcChannel::CudaIpcChannel(cuda::Driver *driver, int ordinal, cuda::Stream stream, const RemoteRegions *regions,
                               std::function<bool()> alive)
    : driver_(driver),
      ordinal_(ordinal),
      stream_(stream),
      regions_(regions),
      alive_(std::move(alive)),
      cache_(driver, ordinal) {
  poller_ = std::thread([this] { Poller(); });
}

CudaIpcChannel::~CudaIpcChannel() {
  Close("the link is closing");
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.NotifyAll();
  }
  poller_.join();
  driver_->StreamDestroy(ordinal_, stream_);
}

void CudaIpcChannel::Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
                            Deadline deadline, bool caller_waits) {
  done->AddParts(1);
  auto job = std::make_shared<Job>();
  job->done = done;
  std::string why;
  bool queued = false;
  Status submitted = SUCCESS;  // (job->status is the poller's once the job is listed)
  {
    // A region revoked from now on is not in the table: its pieces fail.
    // One revoked before is waited for (BeforeRevokeAck finds its job).
    RemoteRegions::Hold hold(*regions_);
    MutexLock lock(&mu_);
    if (closed_) {
      why = "the channel is closed";
      job->status = FAILED;
    }
    for (size_t i = 0; i < n && job->status == SUCCESS; ++i) {
      const Piece &p = pieces[i];
      const RemoteRegion *rr = p.remote_region;
      const std::vector<uint8_t> *bytes = rr != nullptr ? wire::FindSection(rr->sections, kWireId) : nullptr;
      IpcSection s;
      uintptr_t mapped = 0;
      if (!hold.Contains(p.remote, p.len)) {
        why = "the target revoked the region meanwhile";
        job->status = FAILED;
      } else if (bytes == nullptr || !DecodeSection(*bytes, &s)) {
        why = "the target's region has no valid IPC handle (memory from the VMM API, or the export failed there)";
        job->status = FAILED;
      } else if (p.remote < s.alloc_base || p.len > s.alloc_len || p.remote - s.alloc_base > s.alloc_len - p.len) {
        why = "a range outside the allocation the target's table names";
        job->status = FAILED;
      } else if (!cache_.Map(s.handle, &mapped, &why)) {
        job->status = FAILED;
      } else {
        const auto key = IpcHandleCache::KeyOf(s.handle);
        used_[{rr->range.addr, rr->range.len}] = key;
        if (job->keys.empty() || job->keys.back() != key) job->keys.push_back(key);
        const uintptr_t remote = mapped + static_cast<uintptr_t>(p.remote - s.alloc_base);
        const uintptr_t dst = is_write ? remote : p.local;
        const uintptr_t src = is_write ? p.local : remote;
        if (!driver_->CopyAsync(ordinal_, dst, src, p.len, stream_, &why)) job->status = FAILED;
      }
    }
    // Even after a failure: copies already queued run, and the batch may
    // end only when they have.
    submitted = job->status;
    std::string err;
    if (!closed_ && driver_->EventRecord(ordinal_, stream_, &job->event, &err)) {
      jobs_.push_back(job);
      queued = true;
      cv_.NotifyAll();
    } else if (!closed_) {
      // Nothing can tell when this stream's copies end any more.
      why += (why.empty() ? "" : "; ") + err;
      closed_ = true;
      submitted = FAILED;
    }
  }
  if (submitted != SUCCESS) HIXL_LOGE("cuda_ipc: %s %zu piece(s): %s", is_write ? "WRITE" : "READ", n, why.c_str());
  if (!queued) {
    done->PartDone(FAILED);
    return;
  }
  if (caller_waits) {
    // The caller waits anyway: poll on its thread meanwhile (done first).
    while (!deadline.Expired()) {
      {
        MutexLock lock(&mu_);
        if (job->event == nullptr) break;
      }
      PollOnce();
      std::this_thread::yield();
    }
  }
}

void CudaIpcChannel::PollOnce() {
  std::vector<std::shared_ptr<Job>> finished;
  std::vector<std::function<void()>> acks;
  {
    MutexLock lock(&mu_);
    // One stream: its events complete in order.
    while (!jobs_.empty()) {
      auto &job = jobs_.front();
      std::string why;
      cuda::EventState st = driver_->EventQuery(ordinal_, job->event, &why);
      if (st == cuda::EventState::kPending) break;
      if (st == cuda::EventState::kFailed) {
        HIXL_LOGE("cuda_ipc: a batch's copies failed on the GPU: %s", why.c_str());
        job->status = FAILED;
      }
      driver_->EventDestroy(ordinal_, job->event);
      job->event = nullptr;
      finished.push_back(job);
      jobs_.pop_front();
    }
    // Revoked allocations no batch in flight uses: closed, then answered.
    for (auto it = revokes_.begin(); it != revokes_.end();) {
      bool busy = false;
      for (const auto &j : jobs_) {
        for (const auto &k : j->keys) busy = busy || k == it->key;
      }
      if (busy) {
        ++it;
        continue;
      }
      cache_.Unmap(it->key);
      acks.push_back(std::move(it->ack));
      it = revokes_.erase(it);
    }
  }
  for (const auto &job : finished) job->done->PartDone(job->status);
  for (auto &ack : acks) ack();
}

void CudaIpcChannel::Poller() {
  UniqueLock lock(&mu_);
  while (!stop_) {
    if (jobs_.empty() && revokes_.empty()) {
      cv_.Wait(lock);
      continue;
    }
    lock.Unlock();
    PollOnce();
    std::this_thread::sleep_for(kPollPause);
    lock.Lock();
  }
}

template <class Pred>
void CudaIpcChannel::PollUntilNone(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + kCopyLimit;
  for (;;) {
    {
      MutexLock lock(&mu_);
      bool any = false;
      for (const auto &j : jobs_) any = any || pred(*j);
      if (!any) return;
    }
    if (std::chrono::steady_clock::now() > until) {
      HIXL_LOGE("cuda_ipc: copies still running on the GPU after %lld s; going on without them",
                static_cast<long long>(kCopyLimit.count()));
      return;
    }
    PollOnce();
    std::this_thread::sleep_for(kPollPause);
  }
}

void CudaIpcChannel::Cancel(const Completion *done) {
  PollUntilNone([done](const Job &j) { return j.done.get() == done; });
}

void CudaIpcChannel::Progress() { PollOnce(); }

void CudaIpcChannel::Close(const char *why) {
  {
    MutexLock lock(&mu_);
    if (!closed_) HIXL_LOGI("cuda_ipc: channel closing: %s", why);
    closed_ = true;
  }
  PollUntilNone([](const Job &) { return true; });
  std::vector<std::function<void()>> acks;
  {
    MutexLock lock(&mu_);
    cache_.Clear();
    used_.clear();
    for (auto &r : revokes_) acks.push_back(std::move(r.ack));
    revokes_.clear();
  }
  for (auto &ack : acks) ack();
}

bool CudaIpcChannel::broken() const {
  {
    MutexLock lock(&mu_);
    if (closed_) return true;
  }
  return !alive_();
}

bool CudaIpcChannel::idle() const {
  MutexLock lock(&mu_);
  return jobs_.empty();
}

void CudaIpcChannel::BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) {
  {
    MutexLock lock(&mu_);
    auto it = used_.find({region.addr, region.len});
    if (it != used_.end()) {
      revokes_.push_back({it->second, std::move(ack)});
      used_.erase(it);
      cv_.NotifyAll();
      return;
    }
  }
  ack();  // never opened by us: nothing to close
}

size_t CudaIpcChannel::open_mappings() const {
  MutexLock lock(&mu_);
  return cache_.size();
}

}  // namespace hixl::cuda_ipc
