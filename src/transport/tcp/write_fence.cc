#include "transport/tcp/write_fence.h"

#include "common/log.h"

namespace hixl::tcp {
namespace {

void Fail(std::vector<std::unique_ptr<Request>> *frames) {
  for (auto &r : *frames) r->done->PartDone(FAILED);
  frames->clear();
}

}  // namespace

void WriteFence::SetStreams(std::vector<std::weak_ptr<InitiatorStream>> streams) {
  MutexLock lock(&mu_);
  streams_ = std::move(streams);
}

std::vector<size_t> WriteFence::FencedLocked() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < streams_.size(); ++i) {
    auto s = streams_[i].lock();
    if (s != nullptr && s->abandoned_writes() > 0) out.push_back(i);
  }
  return out;
}

size_t WriteFence::Route() const {
  MutexLock lock(&mu_);
  if (!parked_.empty()) return parked_stream_;
  auto fenced = FencedLocked();
  return fenced.empty() ? kAnyStream : fenced.front();
}

size_t WriteFence::Admit(std::vector<std::unique_ptr<Request>> *frames, size_t planned) {
  MutexLock lock(&mu_);
  auto fenced = FencedLocked();
  if (parked_.empty() && fenced.size() <= 1) return fenced.empty() ? planned : fenced.front();
  if (parked_.empty()) {
    parked_stream_ = planned;
    HIXL_LOGI("%zu streams carry frames of timed-out WRITEs: later frames wait until all but one are answered",
              fenced.size());
  }
  for (auto &r : *frames) parked_.push_back(std::move(r));
  frames->clear();
  parking_.store(!parked_.empty(), std::memory_order_release);
  return kAnyStream;
}

void WriteFence::Lifted() {
  std::shared_ptr<InitiatorStream> to;
  std::vector<std::unique_ptr<Request>> failed;
  {
    MutexLock lock(&mu_);
    if (parked_.empty()) return;
    auto fenced = FencedLocked();
    if (fenced.size() > 1) return;
    const size_t i = fenced.empty() ? parked_stream_ : fenced.front();
    to = i < streams_.size() ? streams_[i].lock() : nullptr;
    std::vector<std::unique_ptr<Request>> go;
    go.swap(parked_);
    parking_.store(false, std::memory_order_release);
    // Into the stream's inbox before the lock goes: a Cancel (Drop, then the
    // streams' Cancel) finds them in one place or the other, never between.
    if (to == nullptr || !to->Enqueue(&go)) {
      failed.swap(go);
      to = nullptr;
    }
  }
  // Outside the lock: completing requests runs their callbacks, which may
  // submit to (and so lock the fence of) this or another link.
  Fail(&failed);
  if (to != nullptr) to->Flush(/*may_wait=*/true);
}

void WriteFence::Drop(const Completion *done) {
  std::vector<std::unique_ptr<Request>> dropped;
  {
    MutexLock lock(&mu_);
    std::vector<std::unique_ptr<Request>> keep;
    for (auto &r : parked_) (done == nullptr || r->done.get() == done ? dropped : keep).push_back(std::move(r));
    parked_.swap(keep);
    parking_.store(!parked_.empty(), std::memory_order_release);
  }
  Fail(&dropped);
}

}  // namespace hixl::tcp
