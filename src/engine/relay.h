// relay.h: moves the pieces of a batch whose local memory is not registered
// through the engine's staging buffers (the buffer pool), and so does
// registered memory the link's channel cannot reach itself (device memory
// over tcp: copied by its memory kind through the driver). Each round takes
// one buffer, packs as many pieces (or parts of one) as fit, and goes out on
// the link's channel as a batch of its own: a WRITE copies into the buffer
// first, a READ copies out of it when the round is done. Rounds run as
// buffers come free, so many callers share N buffers by waiting, not failing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/completion.h"
#include "common/deadline.h"
#include "common/mutex.h"
#include "engine/buffer_pool.h"
#include "transport/channel.h"

namespace hixl {

class Relay : public std::enable_shared_from_this<Relay> {
 public:
  // Adds one part to `done`, finished when every piece has been moved (or
  // with the first failure). `keepalive` owns `channel` (the link): rounds
  // can finish after the caller has gone, and still use the channel.
  // Nothing moves before Run().
  static std::shared_ptr<Relay> Create(std::shared_ptr<void> keepalive, Channel *channel, BufferPool *pool,
                                       bool is_write, std::vector<Piece> pieces, const std::shared_ptr<Completion> &done,
                                       Deadline deadline);
  void Run() { RequestBuffer(); }
  // After it returns, no round touches the caller's memory any more and no
  // new round starts.
  void Cancel() EXCLUDES(mu_);

 private:
  struct Round {
    BufferPool::Buffer *buffer;
    std::vector<Piece> user;     // the caller's pieces this round carries
    std::vector<Piece> staged;   // the same, with local addresses in the buffer
    std::shared_ptr<Completion> done;
    bool submitted = false;  // under the relay's mu_
  };

  Relay() = default;
  // Between a caller's piece and staging memory, by the piece's memory kind.
  static bool CopyOut(const Piece &user, uint8_t *staging, std::string *why);
  static bool CopyIn(const Piece &user, const uint8_t *staging, std::string *why);
  void RequestBuffer() EXCLUDES(mu_);
  void OnBuffer(BufferPool::Buffer *b) EXCLUDES(mu_);
  void OnRoundDone(const std::shared_ptr<Round> &round) EXCLUDES(mu_);

  // Set by Create, constant after: read without a lock.
  std::shared_ptr<void> keepalive_;
  Channel *channel_ = nullptr;
  BufferPool *pool_ = nullptr;
  bool is_write_ = false;
  std::vector<Piece> pieces_;
  std::shared_ptr<Completion> done_;
  Deadline deadline_ = Deadline::Never();

  // Guards the progress below, and is held while copying to or from the
  // caller's memory, so that Cancel returns only after such a copy. Taken
  // before the buffer pool's lock (a buffer given back under it goes to the
  // next waiter only after this relay's callback returns: see BufferPool).
  Mutex mu_;
  size_t next_ GUARDED_BY(mu_) = 0;        // next piece to pack
  size_t offset_ GUARDED_BY(mu_) = 0;      // bytes of pieces_[next_] already packed
  size_t in_flight_ GUARDED_BY(mu_) = 0;   // rounds submitted and not finished
  size_t rounds_ok_ GUARDED_BY(mu_) = 0;   // rounds that succeeded
  bool finished_ GUARDED_BY(mu_) = false;  // done_ has had its part
  std::vector<std::shared_ptr<Round>> rounds_ GUARDED_BY(mu_);
};

}  // namespace hixl
