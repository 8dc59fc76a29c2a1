// listener.h: accepts streams on a server engine's port and hands each to
// the least loaded I/O worker as a TargetStream.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/io_worker.h"
#include "control/peer_handler.h"

namespace hixl::tcp {

class TargetStream;

class Listener : public Pollable, public std::enable_shared_from_this<Listener> {
 public:
  // Streams accepted and not yet through their handshake, at most: one more
  // drops the oldest of those from the address with the most waiting. A legitimate handshake takes microseconds; a
  // peer that opens connections and says nothing would otherwise hold an fd
  // per connection for TargetStream::kHandshakeTimeout.
  static constexpr size_t kMaxPendingHandshakes = 512;

  // Out of fds (accept fails with EMFILE or ENFILE), this many streams of
  // the address holding the most streams, quiet for TargetStream::kEvictQuiet,
  // are closed at a time to make room, and accepting resumes after
  // kEvictPause: a peer that opens streams until the process has no fd left
  // would otherwise lock every other peer out for as long as it keeps them.
  static constexpr size_t kEvictBatch = 8;
  static constexpr std::chrono::milliseconds kEvictPause{10};

  // `home`: the worker the listener itself is added to.
  Listener(int fd, IoWorker *home, const std::vector<std::unique_ptr<IoWorker>> *workers, PeerHandler *handler);
  ~Listener() override;
  int fd() const override { return fd_; }
  void OnEvents(uint32_t events) override;
  void OnShutdown() override;

 private:
  // accept() failing for lack of fds or memory stays failing while the
  // socket stays readable: stop watching it for this long, not spin.
  static constexpr std::chrono::milliseconds kBackoff{100};
  void Resume();
  void PauseFor(std::chrono::milliseconds pause);
  // Posts EvictIfQuiet to up to `want` quiet streams of the address with
  // the most streams, oldest first; returns how many, and that address in
  // *source.
  size_t EvictQuiet(size_t want, std::string *source);
  // Forgets streams that are through their handshake (or gone) and drops
  // the oldest silent one while there are too many.
  void LimitPending();

  int fd_;
  IoWorker *home_;
  const std::vector<std::unique_ptr<IoWorker>> *workers_;
  PeerHandler *handler_;
  struct Tracked {
    std::weak_ptr<TargetStream> stream;
    std::string source;  // the peer's address, without the port
  };
  std::deque<Tracked> pending_;  // awaiting their handshake, oldest first; home_ thread only
  // Every stream, oldest first; home_ thread only. Pruned of closed ones when
  // it has doubled (a weak_ptr keeps a closed stream's memory).
  std::deque<Tracked> accepted_;
  // The address with the most entries in `list` (nullptr if it is empty).
  static const std::string *Busiest(const std::deque<Tracked> &list);
  size_t prune_at_ = 64;
};

}  // namespace hixl::tcp
