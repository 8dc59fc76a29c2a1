// channel.h: the data path of a link. The engine checks a batch, then hands
// it to the link's channel: TCP streams (transport/tcp) or, to an engine on
// the same host, direct copies into its memory (transport/shm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/completion.h"
#include "common/deadline.h"

namespace hixl {

// One piece of a batch: `len` bytes between local and remote addresses.
struct Piece {
  uintptr_t local;
  uintptr_t remote;
  size_t len;
};

class Channel {
 public:
  virtual ~Channel() = default;
  virtual const char *name() const = 0;
  // Starts moving the batch; every part it makes is one part of `done`.
  // With `caller_waits` the channel may do the work on the calling thread
  // before it returns (it then honours `deadline` itself).
  virtual void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
                      Deadline deadline, bool caller_waits) = 0;
  // After it returns, nothing of `done` touches user memory any more.
  virtual void Cancel(const Completion *done) = 0;
  // Lends the calling thread to move what is pending, without blocking (a
  // caller polling an async request). Channels that need no help ignore it.
  virtual void Progress() {}
};

}  // namespace hixl
