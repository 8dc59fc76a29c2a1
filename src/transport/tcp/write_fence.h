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
#include <mutex>
#include <vector>

#include "common/completion.h"
#include "transport/tcp/initiator_stream.h"

namespace hixl::tcp {

class WriteFence {
 public:
  static constexpr size_t kAnyStream = SIZE_MAX;
  // Before any frame: the link's streams, in order.
  void SetStreams(std::vector<std::weak_ptr<InitiatorStream>> streams);
  // Where the next batch's frames go: kAnyStream, or the one stream they
  // must go on (and then through Admit).
  size_t Route() const;
  // Frames planned for stream `planned` (by Route): parks them, and
  // returns kAnyStream, or returns the stream to submit them to now.
  size_t Admit(std::vector<std::unique_ptr<Request>> *frames, size_t planned);
  // A stream's cancelled WRITEs were answered (or it closed): parked frames
  // go if at most one stream still has some.
  void Lifted();
  // Parked frames of `done` fail (FAILED); those of every request if null.
  void Drop(const Completion *done);
  bool empty() const { return !parking_.load(std::memory_order_acquire); }

 private:
  // Streams with cancelled WRITE frames unanswered; under mu_.
  std::vector<size_t> FencedLocked() const;

  // No callback runs under it (requests are failed and flushed after it is
  // released). Recursive only as a guard against a path that re-enters.
  mutable std::recursive_mutex mu_;
  std::vector<std::weak_ptr<InitiatorStream>> streams_;
  std::vector<std::unique_ptr<Request>> parked_;  // in order
  size_t parked_stream_ = 0;  // the stream they were planned for
  std::atomic<bool> parking_{false};  // !parked_.empty(), readable without mu_
};

}  // namespace hixl::tcp
