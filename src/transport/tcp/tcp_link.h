// tcp_link.h: TCP streams to one remote engine, on the side that dials. A
// link's control connection is one (control/control_link.h); the tcp
// transport's data path is another, of tcp.streams_per_link streams (see
// tcp_transport.h). Batches are cut into frames and spread over the streams;
// control requests go in order on the first stream.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/address.h"
#include "common/completion.h"
#include "common/deadline.h"
#include "hixl/hixl_types.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"
#include "transport/tcp/initiator_stream.h"
#include "common/io_worker.h"
#include "transport/tcp/write_fence.h"
#include "wire/messages.h"

namespace hixl::auth {
class Authenticator;
}

namespace hixl::tcp {

struct LinkParams {
  std::string local_name;   // our engine's name, for the peer's logs
  EngineAddress remote;
  uint64_t link_nonce = 0;   // the link's id in every HELLO; 0: a fresh one
  // The streams to dial: HELLO stream indexes first_index.. (0 is a link's
  // control stream), `count` of them, of `stream_total` in the link.
  uint16_t first_index = 0;
  uint16_t count = 1;
  uint16_t stream_total = 1;
  uint32_t heartbeat_ms = 0;  // told to the target, which drops links silent for 3x this
  wire::HostIdentity host;
  wire::Sections offers;      // the transports' parts of HELLO, on the first stream
  // Our key (nullptr: none): every stream then proves it and demands the
  // target's proof (auth/authenticator.h) before the target's HELLO_ACK.
  std::shared_ptr<const auth::Authenticator> auth;
  // Called after the first stream's handshake, with the target's answer and
  // the socket, before any frame from the target is read (so a REVOKE cannot
  // arrive before the table it revokes from): false gives up (it logged why).
  std::function<bool(const wire::HelloAck &, int fd)> after_hello;
  // Frames the target pushes (REVOKE), on the first stream.
  InitiatorStream::PushHandler on_push;
  // Run by each stream as it closes, before its socket is (see
  // InitiatorStream): the engine waits there for direct copies in flight, so
  // that when the target sees the control stream end, no copy into its
  // memory is running or can start (it takes that end as the link's last
  // word on revocations).
  std::function<void()> before_close;
  // Dialing and the handshakes give up soon after this turns true.
  const std::atomic<bool> *cancel = nullptr;
};

class TcpLink : public Channel {
 public:
  // Dials every stream and runs the handshakes before `deadline`. SUCCESS,
  // TIMEOUT, or FAILED with the reason in *why. `ack` gets the answer to the
  // first stream's HELLO.
  static Status Open(const LinkParams &params, const std::vector<std::unique_ptr<IoWorker>> &workers,
                     Deadline deadline, std::unique_ptr<TcpLink> *out, wire::HelloAck *ack, std::string *why);
  ~TcpLink() override;

  const char *name() const override { return "tcp"; }
  // Queues a batch, never blocking on the wire. Every frame is one part of
  // `done`; frames that cannot be queued (a closed stream) fail at once.
  void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
              Deadline deadline, bool caller_waits) override;
  // Queues one control request on the first stream (one part of its
  // completion).
  void SubmitControl(std::unique_ptr<Request> req);
  // After it returns, nothing of `done`'s requests touches user memory.
  void Cancel(const Completion *done) override;
  void Progress() override;
  void Close(const char *why) override;
  // The peer's device memory too: its target streams stage it (and our
  // own, the engine's relay).
  MemKinds remote_kinds() const override { return kHostOnly | MemKindBit(wire::MemKind::kDevice); }
  // True once any stream has closed: the link can no longer carry batches.
  bool broken() const override;
  // True when no stream has a caller's request outstanding (a heartbeat
  // PING awaiting its PONG is not one: the pool may close the link).
  bool idle() const override;
  // Heartbeat, called every so often: sends a PING on streams that have
  // been quiet for `interval_ms`; returns false when a stream with requests
  // outstanding has received nothing for twice that (the peer is gone).
  bool CheckAlive(int64_t interval_ms) override;
  uint64_t link_nonce() const { return nonce_; }
  // The first stream's socket (-1 once closed).
  int first_fd() const { return streams_[0]->fd(); }

 private:
  TcpLink() = default;
  void SubmitOrFail(InitiatorStream *s, std::vector<std::unique_ptr<Request>> *reqs, bool may_wait = false);

  std::string remote_name_;
  uint64_t nonce_ = 0;
  std::vector<std::shared_ptr<InitiatorStream>> streams_;
  std::vector<BufferCache *> caches_;  // streams_[i]->buffers(), for PlanFrames
  std::atomic<size_t> rotate_{0};
  // Shared with the streams' callbacks, which may outlive the link.
  std::shared_ptr<WriteFence> fence_ = std::make_shared<WriteFence>();
};

}  // namespace hixl::tcp
