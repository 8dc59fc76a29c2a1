// tcp_link.h: the initiator's side of a link over TCP: a few streams to one
// remote engine. Batches are cut into frames and spread over the streams;
// control messages (notifies, region queries) go in order on stream 0.
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

namespace hixl::tcp {

struct LinkParams {
  std::string local_name;   // our engine's name, for the peer's logs
  EngineAddress remote;
  uint32_t heartbeat_ms = 0;  // told to the target, which drops links silent for 3x this
  wire::HostIdentity host;
  // Filled from the target's answer before any frame from it is read
  // (so a REVOKE cannot arrive before the table it revokes from).
  RemoteRegions *regions = nullptr;
  // Frames the target pushes (REVOKE), on stream 0.
  InitiatorStream::PushHandler on_push;
  // Called after stream 0's handshake, with its socket: how many streams
  // the link gets in all (at least 1), or 0 to give up (the callback logged
  // why).
  std::function<uint32_t(const wire::HelloAck &, int fd)> streams_after_hello;
  // Run by each stream as it closes, before its socket is: the engine waits
  // there for shm copies in flight (a copy checks the link under a Hold of
  // `regions`), so that when the target sees the stream end, no copy into
  // its memory is running or can start (it takes that end as the link's
  // last word on revocations).
  std::function<void()> before_close;
  // Dialing and the handshakes give up soon after this turns true.
  const std::atomic<bool> *cancel = nullptr;
};

class TcpLink : public Channel {
 public:
  // Dials every stream and runs the handshake before `deadline`. SUCCESS,
  // TIMEOUT, or FAILED with the reason logged. `ack` is the target's answer.
  static Status Open(const LinkParams &params, const std::vector<std::unique_ptr<IoWorker>> &workers,
                     Deadline deadline, std::unique_ptr<TcpLink> *out, wire::HelloAck *ack);
  ~TcpLink() override;

  const char *name() const override { return "tcp"; }
  // Queues a batch, never blocking on the wire. Every frame is one part of
  // `done`; frames that cannot be queued (a closed stream) fail at once.
  void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
              Deadline deadline, bool caller_waits) override;
  // Queues one control request on stream 0 (one part of its completion).
  void SubmitControl(std::unique_ptr<Request> req);
  // After it returns, nothing of `done`'s requests touches user memory.
  void Cancel(const Completion *done) override;
  void Progress() override;
  void Close(const char *why);
  // True once any stream has closed: the link can no longer carry batches.
  bool broken() const;
  // True when no stream has a caller's request outstanding (a heartbeat
  // PING awaiting its PONG is not one: the pool may close the link).
  bool idle() const;
  // Heartbeat, called every so often: sends a PING on streams that have
  // been quiet for `interval_ms`; returns false when a stream with requests
  // outstanding has received nothing for twice that (the peer is gone).
  bool CheckAlive(int64_t interval_ms);

 private:
  TcpLink() = default;
  void SubmitOrFail(InitiatorStream *s, std::vector<std::unique_ptr<Request>> *reqs, bool may_wait = false);

  std::string remote_name_;
  std::vector<std::shared_ptr<InitiatorStream>> streams_;
  std::vector<BufferCache *> caches_;  // streams_[i]->buffers(), for PlanFrames
  std::atomic<size_t> rotate_{0};
  // Shared with the streams' callbacks, which may outlive the link.
  std::shared_ptr<WriteFence> fence_ = std::make_shared<WriteFence>();
};

}  // namespace hixl::tcp
