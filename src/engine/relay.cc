#include "engine/relay.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "common/log.h"
#include "memory/registry.h"

namespace hixl {

std::shared_ptr<Relay> Relay::Create(std::shared_ptr<void> keepalive, Channel *channel, BufferPool *pool,
                                     bool is_write, std::vector<Piece> pieces, const std::shared_ptr<Completion> &done,
                                     Deadline deadline) {
  std::shared_ptr<Relay> r(new Relay());
  r->keepalive_ = std::move(keepalive);
  r->channel_ = channel;
  r->pool_ = pool;
  r->is_write_ = is_write;
  r->pieces_ = std::move(pieces);
  r->done_ = done;
  r->deadline_ = deadline;
  done->AddParts(1);
  return r;
}

// Unregistered memory is taken for host memory; registered memory of
// another kind (device memory over a host-only channel) is copied by its
// kind, from where it lives.
bool Relay::CopyOut(const Piece &user, uint8_t *staging, std::string *why) {
  if (user.local_region == nullptr) {
    std::memcpy(staging, reinterpret_cast<const void *>(user.local), user.len);
    return true;
  }
  const Region &r = *user.local_region;
  return r.memory->CopyToHost(r.placement, staging, reinterpret_cast<const void *>(user.local), user.len, why);
}

bool Relay::CopyIn(const Piece &user, const uint8_t *staging, std::string *why) {
  if (user.local_region == nullptr) {
    std::memcpy(reinterpret_cast<void *>(user.local), staging, user.len);
    return true;
  }
  const Region &r = *user.local_region;
  return r.memory->CopyFromHost(r.placement, reinterpret_cast<void *>(user.local), staging, user.len, why);
}

void Relay::RequestBuffer() {
  // The pool may call back at once (on this thread) or when a buffer comes
  // free (on whichever thread frees it).
  auto self = shared_from_this();
  pool_->Acquire([self](BufferPool::Buffer *b) { self->OnBuffer(b); });
}

void Relay::OnBuffer(BufferPool::Buffer *b) {
  auto round = std::make_shared<Round>();
  round->buffer = b;
  // Set before the round is listed: Cancel reads it from another thread.
  round->done = std::make_shared<Completion>();
  bool more = false;
  {
    UniqueLock lock(&mu_);
    if (finished_ || next_ == pieces_.size()) {
      pool_->Release(b);  // cancelled or failed meanwhile, or nothing left
      return;
    }
    if (deadline_.Expired()) {
      pool_->Release(b);
      finished_ = true;
      // Outside the lock: finishing the batch may cancel this relay.
      lock.Unlock();
      done_->PartDone(TIMEOUT);
      return;
    }
    size_t used = 0;
    while (next_ < pieces_.size() && used < b->size) {
      const Piece &p = pieces_[next_];
      size_t take = std::min(p.len - offset_, b->size - used);
      Piece user{p.local + offset_, p.remote + offset_, take, p.local_region, p.remote_region};
      Piece staged{reinterpret_cast<uintptr_t>(b->data + used), p.remote + offset_, take, nullptr, p.remote_region};
      std::string why;
      if (is_write_ && !CopyOut(user, b->data + used, &why)) {
        HIXL_LOGE("Transfer WRITE: staging local 0x%" PRIxPTR "+%zu failed: %s; the batch fails", user.local, take,
                  why.c_str());
        pool_->Release(b);
        finished_ = true;
        lock.Unlock();
        done_->PartDone(FAILED);
        return;
      }
      round->user.push_back(user);
      round->staged.push_back(staged);
      used += take;
      offset_ += take;
      if (offset_ == p.len) {
        ++next_;
        offset_ = 0;
      }
    }
    more = next_ < pieces_.size();
    ++in_flight_;
    rounds_.push_back(round);
  }
  auto self = shared_from_this();
  round->done->SetOnFinish([self, round] { self->OnRoundDone(round); });
  // Ask for the next buffer before this round goes out, so that rounds
  // overlap when buffers are free.
  if (more) RequestBuffer();
  channel_->Submit(is_write_, round->staged.data(), round->staged.size(), round->done, deadline_,
                   /*caller_waits=*/false);
  // Cancelled (or failed) between listing the round and submitting it: its
  // Cancel found nothing of it on the channel yet, so stop it now.
  bool stop;
  {
    MutexLock lock(&mu_);
    stop = finished_;
    round->submitted = true;
  }
  if (stop) {
    channel_->Cancel(round->done.get());
    round->done->Finish(FAILED);  // abandoned frames no longer touch the buffer
  }
}

void Relay::OnRoundDone(const std::shared_ptr<Round> &round) {
  Status s = SUCCESS;
  round->done->Poll(&s);
  // A round that failed may have parts still in flight: stop them before
  // its buffer goes back to the pool for someone else.
  if (s != SUCCESS) channel_->Cancel(round->done.get());
  bool all_done = false;
  Status failed = SUCCESS;
  {
    MutexLock lock(&mu_);
    rounds_.erase(std::remove(rounds_.begin(), rounds_.end(), round), rounds_.end());
    --in_flight_;
    if (!finished_) {
      if (s != SUCCESS) {
        finished_ = true;
        failed = s;
        // Every frame of this round was refused: the relay moved nothing
        // if no other round did or still may (rounds in flight are
        // cancelled, possibly half done).
        if (s == PARAM_INVALID) failed = rounds_ok_ == 0 && in_flight_ == 0 ? kRefused : FAILED;
      } else {
        ++rounds_ok_;
        size_t at = 0;
        std::string why;
        for (const Piece &p : round->user) {
          if (is_write_) break;
          if (!CopyIn(p, round->buffer->data + at, &why)) {
            HIXL_LOGE("Transfer READ: copying into local 0x%" PRIxPTR "+%zu failed: %s; the batch fails", p.local,
                      p.len, why.c_str());
            failed = FAILED;
            finished_ = true;
            break;
          }
          at += p.len;
        }
        all_done = failed == SUCCESS && next_ == pieces_.size() && in_flight_ == 0;
        if (all_done) finished_ = true;
      }
    }
  }
  pool_->Release(round->buffer);
  // Outside the lock: finishing the batch runs its callbacks, and an async
  // request's release cancels this relay, which takes the lock.
  if (failed != SUCCESS) done_->PartDone(failed);
  if (all_done) done_->PartDone(SUCCESS);
}

void Relay::Cancel() {
  std::vector<std::shared_ptr<Round>> rounds;
  {
    MutexLock lock(&mu_);  // waits for a copy in progress
    finished_ = true;
    rounds = rounds_;
  }
  for (const auto &r : rounds) {
    bool submitted;
    {
      MutexLock lock(&mu_);
      submitted = r->submitted;
    }
    if (!submitted) continue;  // OnBuffer stops it after its Submit
    channel_->Cancel(r->done.get());
    // After Cancel nothing of the round touches its buffer: give it back now
    // rather than when the peer answers the frames abandoned on the wire.
    r->done->Finish(FAILED);
  }
}

}  // namespace hixl
