// write_fence.h: keeps a link's later frames from overtaking the WRITE
// frames of cancelled (timed-out) requests that are still on the wire.
//
// The target applies every frame it receives, in the order of its stream,
// those of a request we gave up on included. A frame sent on another stream
// meanwhile may be applied first and then overwritten by the stale one (or,
// a READ, miss it), although its request reported COMPLETED. So while one
// stream has such frames, new frames go behind them on that stream; while
// several streams have, new frames wait here until all but one are answered.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "common/completion.h"
#include "common/mutex.h"
#include "transport/tcp/initiator_stream.h"

namespace hixl::tcp {

class WriteFence {
 public:
  static constexpr size_t kAnyStream = SIZE_MAX;
  // Before any frame: the link's streams, in order.
  void SetStreams(std::vector<std::weak_ptr<InitiatorStream>> streams) EXCLUDES(mu_);
  // Where the next batch's frames go: kAnyStream, or the one stream they
  // must go on (and then through Admit).
  size_t Route() const EXCLUDES(mu_);
  // Frames planned for stream `planned` (by Route): parks them, and
  // returns kAnyStream, or returns the stream to submit them to now.
  size_t Admit(std::vector<std::unique_ptr<Request>> *frames, size_t planned) EXCLUDES(mu_);
  // A stream's cancelled WRITEs were answered (or it closed): parked frames
  // go if at most one stream still has some. (Called back by a stream, as
  // it completes requests without its locks.)
  void Lifted() EXCLUDES(mu_);
  // Parked frames of `done` fail (FAILED); those of every request if null.
  void Drop(const Completion *done) EXCLUDES(mu_);
  bool empty() const { return !parking_.load(std::memory_order_acquire); }

 private:
  // Streams with cancelled WRITE frames unanswered.
  std::vector<size_t> FencedLocked() const REQUIRES(mu_);

  // Guards the parked frames and where they go. Nothing that can call back
  // into a fence runs under it: requests are failed, and a stream flushed,
  // after it is let go of. Under it run only a stream's abandoned_writes()
  // (an atomic) and Enqueue (its inbox lock, and no callback), so the
  // fence's lock comes before a stream's sub_mu_. (A debug build aborts on
  // a re-entry: see Mutex.)
  mutable Mutex mu_;
  std::vector<std::weak_ptr<InitiatorStream>> streams_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Request>> parked_ GUARDED_BY(mu_);  // in order
  size_t parked_stream_ GUARDED_BY(mu_) = 0;  // the stream they were planned for
  std::atomic<bool> parking_{false};  // !parked_.empty(), readable without mu_
};

}  // namespace hixl::tcp
