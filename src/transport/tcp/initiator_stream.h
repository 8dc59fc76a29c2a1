// initiator_stream.h: one TCP stream of a link, on the side that connected.
//
// Requests are queued in order and sent pipelined; the target answers them in
// the same order, so the stream matches each reply to the oldest request.
// The payload of a WRITE is sent straight from the user's buffers and the
// payload of a READ reply is received straight into them. All socket I/O
// happens under the stream's mutex: whoever holds it (an I/O worker, a
// caller sending inline, a caller receiving its own replies in
// SubmitAndDrive, or one polling an async request in Progress) is the only
// one touching user memory, which is what lets Cancel() promise that nobody
// touches a request's buffers afterwards.
//
// Submitting does not need that mutex: requests are appended to an inbox
// under a lock that is never held during I/O, and whoever holds the stream
// moves the inbox onto the wire before letting go. So a caller posting async
// requests never waits behind a 4 MiB sendmsg, and requests posted while
// others are on the wire leave together, in one sendmsg that fills whole
// TCP segments.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/completion.h"
#include "common/deadline.h"
#include "common/mutex.h"
#include "transport/tcp/frame_reader.h"
#include "common/io_worker.h"
#include "transport/tcp/iov.h"
#include "wire/frame.h"

namespace hixl::tcp {

struct Request {
  wire::MsgType type = wire::MsgType::kPing;
  uint64_t req_id = 0;
  uint64_t wire_id = 0;          // REVOKE_ACK: the id it echoes (its REVOKE's); others get a fresh id
  uint64_t seq = 0;              // the stream's own running count, for SubmitAndDrive
  uint64_t cost = 0;             // bytes in both directions, while it awaits its reply
  uint8_t hdr[wire::kHeaderSize] = {};
  std::vector<uint8_t> body;     // encoded message body
  std::vector<iovec> payload;    // WRITE: the user's data to send
  std::vector<iovec> in;         // READ: where the reply's payload goes
  uint64_t in_len = 0;
  // Small segments (see Coalesce): a WRITE's payload copied here at submit,
  // or a READ reply received here and scattered to `in` when complete.
  ByteBuffer staged;
  bool stage_in = false;
  std::shared_ptr<Completion> done;
  // Control replies (regions, notify): gets the reply body on success, and
  // its place among the frames received on the stream (from 1): threads
  // that each read part of the stream run these after letting go of it, so
  // a later frame's callback may run first.
  std::function<void(std::vector<uint8_t> &&, uint64_t rx_order)> on_reply;

  // Stream-private state.
  std::vector<iovec> out;  // hdr + body + payload
  IovCursor out_cursor;
  std::vector<iovec> staged_iov;
  bool abandoned = false;  // cancelled: reply is read and dropped
};

class InitiatorStream : public Pollable, public std::enable_shared_from_this<InitiatorStream> {
 public:
  // Frames the target sends unasked (REVOKE), with their req_id, body and
  // place among the frames received on the stream (from 1). Called without
  // the stream's lock, by whichever thread read the frame: not necessarily
  // in that order with the replies before and after it (see on_reply).
  using PushHandler = std::function<void(InitiatorStream &stream, wire::MsgType type, uint64_t id,
                                         std::vector<uint8_t> &&body, uint64_t rx_order)>;

  // `before_close` runs when the stream closes, after closed() turns true
  // and before the socket is closed (see LinkParams::before_close).
  // `on_abandoned_done` runs, without the stream's lock, after frames of
  // cancelled WRITEs were answered or failed (see abandoned_writes()).
  InitiatorStream(int fd, IoWorker *worker, std::string name, PushHandler on_push = nullptr,
                  std::function<void()> before_close = nullptr, std::function<void()> on_abandoned_done = nullptr);
  ~InitiatorStream() override;

  int fd() const override { return polled_fd_.load(); }
  void OnEvents(uint32_t events) EXCLUDES(mu_, sub_mu_) override;
  void OnShutdown() EXCLUDES(mu_, sub_mu_) override;

  // Requests posted with `may_wait` while at least this many bytes of
  // earlier requests await their replies stay in the inbox until a reply is
  // processed (by the worker or a poller), then go out together. A reply is
  // then sure to come, so nothing waits on a timer, and what is in flight
  // keeps the target busy meanwhile.
  static constexpr uint64_t kHoldBytes = 256u << 10;

  // Queues `reqs` in order. Without `may_wait` (or with little in flight)
  // they are sent at once, inline; with it they may wait for the next reply
  // (see kHoldBytes). Never blocks on the wire. Returns false, leaving `reqs`
  // as they are, when the stream is closed.
  bool Submit(std::vector<std::unique_ptr<Request>> *reqs, bool may_wait = false) EXCLUDES(mu_, sub_mu_);
  // Submit in two steps: Enqueue only puts `reqs` in the inbox (where
  // Cancel finds them; false, leaving them, when the stream is closed), and
  // runs nothing else; Flush then sends as Submit would, and may complete
  // requests (and run their callbacks) on the calling thread.
  bool Enqueue(std::vector<std::unique_ptr<Request>> *reqs) EXCLUDES(sub_mu_);
  void Flush(bool may_wait) EXCLUDES(mu_, sub_mu_);
  // Sends what waits in the inbox and receives what has arrived, on the
  // calling thread, without blocking; does nothing if someone else is doing
  // the stream's I/O. A caller polling an async request lends its thread so.
  // While it keeps polling (at least every kPollLease) the I/O worker stops
  // watching for replies, so that the two do not take turns waking up for
  // the same bytes; the worker takes over again when the polls stop.
  void Progress() EXCLUDES(mu_, sub_mu_);
  static constexpr std::chrono::milliseconds kPollLease{2};
  // REVOKEs received and not yet acknowledged on the wire, at most. A target
  // revokes one region at a time per DeregisterMem (and has at most a few
  // hundred regions); more means a target that floods us while not reading
  // our acknowledgements: the stream is closed rather than let them pile up.
  static constexpr size_t kMaxUnackedRevokes = 1024;
  // Submit, and if the stream was idle, receive the replies on the calling
  // thread until these requests are answered, the stream closes or
  // `deadline` passes: a small synchronous transfer then costs one wake-up,
  // as a plain request/response would, instead of waking the I/O worker and
  // then the caller. Returns false, leaving `reqs`, when the stream is closed.
  bool SubmitAndDrive(std::vector<std::unique_ptr<Request>> *reqs, Deadline deadline) EXCLUDES(mu_, sub_mu_);
  // After it returns, no request of `c` is sent or received into user memory
  // any more. A WRITE cut in the middle of its payload is finished with
  // zeros (its remote range holds no promised content), so that the stream
  // and the other requests on it carry on.
  void Cancel(const Completion *c) EXCLUDES(mu_, sub_mu_);
  // Fails every queued request with FAILED and closes the socket.
  void Close(const char *why) EXCLUDES(mu_, sub_mu_);
  bool closed() const { return closed_.load(); }
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // Of those, the requests of callers: not the stream's own PINGs and
  // REVOKE_ACKs, which keep no link in use (the channel pool may close it).
  size_t calls_queued() const { return calls_queued_.load(std::memory_order_relaxed); }
  // WRITE frames of cancelled requests that are (partly) on the wire and
  // not yet answered: the target may still apply them, after anything sent
  // on another stream meanwhile (see TcpLink::Submit).
  size_t abandoned_writes() const { return abandoned_writes_.load(std::memory_order_acquire); }
  // When bytes last arrived (or the stream opened), steady-clock ms.
  int64_t last_rx_ms() const { return last_rx_ms_.load(std::memory_order_relaxed); }
  // When sending last made progress, steady-clock ms.
  int64_t last_tx_ms() const { return last_tx_ms_.load(std::memory_order_relaxed); }
  const std::string &name() const { return name_; }
  // Staging buffers for this stream's small-segment frames, reused.
  BufferCache &buffers() { return buffers_; }

 private:
  struct Finished {
    std::unique_ptr<Request> req;  // nullptr for a push
    Status status;
    std::vector<uint8_t> body;
    wire::MsgType push_type = wire::MsgType::kPing;
    uint64_t push_id = 0;
    uint64_t rx_order = 0;  // a received frame's place on the stream
  };
  using FinishedList = std::vector<Finished>;

  void SendLocked(FinishedList *fin) REQUIRES(mu_);
  void RecvLocked(FinishedList *fin) REQUIRES(mu_);
  bool OnHeaderLocked(FinishedList *fin) REQUIRES(mu_);  // false: protocol error (stream closed)
  void FinishFrontLocked(FinishedList *fin) REQUIRES(mu_);
  // A frame's body is in (or it had none): its payload starts, or it is done.
  void EndOfBodyLocked(FinishedList *fin) REQUIRES(mu_);
  // The front request's reply payload starts: where it goes.
  void StartPayloadLocked() REQUIRES(mu_);
  // Completes the requests at the front that expect no reply and are sent.
  void PopUnansweredLocked(FinishedList *fin) REQUIRES(mu_);
  // Runs before_close_ (under mu_) and takes the worker's lock (Remove).
  void CloseLocked(const std::string &why, FinishedList *fin) REQUIRES(mu_) EXCLUDES(sub_mu_);
  void SetOutLocked(bool on) REQUIRES(mu_);
  void ArmLeaseTimerLocked() REQUIRES(mu_);  // OnLeaseTimer runs at poll_until_
  void OnLeaseTimer() EXCLUDES(mu_);
  // Tells the worker what to watch: EPOLLIN unless a caller is driving the
  // receive side, EPOLLOUT while sends wait for room.
  void ApplyInterestLocked() REQUIRES(mu_);
  void EnqueueLocked(std::vector<std::unique_ptr<Request>> *reqs) REQUIRES(mu_);
  // Moves the inbox onto the queue and sends; every holder of mu_ calls it
  // last, so that nothing posted meanwhile is left behind. Unless `force`d,
  // it leaves the inbox while kHoldBytes are in flight: the next reply's
  // pump sends it, in one go with whatever joins it meanwhile.
  void PumpLocked(FinishedList *fin, bool force = true) REQUIRES(mu_) EXCLUDES(sub_mu_);
  void ForgetLocked(const Request &r) REQUIRES(mu_);
  void PublishCountsLocked() REQUIRES(mu_);  // queued_ and calls_queued_ from q_
  // Cancel: the rest of a WRITE's payload is sent as zeros (see Cancel).
  void PadCutWriteLocked(Request *r) REQUIRES(mu_);  // r leaves q_: its cost and reply no longer pending
  // Runs the callbacks of what finished: without the locks, since they may
  // submit again (to this stream too).
  void Complete(FinishedList *fin) EXCLUDES(mu_, sub_mu_);

  // Lock order: mu_, then sub_mu_ (taken inside mu_ or alone, never the
  // other way). Under mu_ the stream also takes its worker's lock (Modify,
  // PostAt, Remove), the fd list's (fork_fds.h) and, in before_close_, the
  // link's remote regions' (waiting for copies in flight).
  //
  // Guards the inbox: callers append to it without waiting for the I/O.
  Mutex sub_mu_ ACQUIRED_AFTER(mu_);
  std::vector<std::unique_ptr<Request>> inbox_ GUARDED_BY(sub_mu_);
  bool inbox_closed_ GUARDED_BY(sub_mu_) = false;
  bool may_hold_ GUARDED_BY(sub_mu_) = false;  // a reply is due and kHoldBytes are in flight

  // Held for all socket I/O and so for every touch of user memory (see the
  // top of this file); guards the queue, the socket and the reader.
  Mutex mu_;
  int fd_ GUARDED_BY(mu_);
  std::atomic<int> polled_fd_;   // fd_ as seen by the worker, without mu_
  // Constant after construction: read without a lock.
  IoWorker *worker_;
  const std::string name_;
  const PushHandler on_push_;
  const std::function<void()> before_close_;
  const std::function<void()> on_abandoned_done_;
  // Published under mu_ for readers that do not take it (the link's
  // heartbeat, the channel pool, the write fence).
  std::atomic<bool> closed_{false};
  std::atomic<size_t> queued_{0};
  std::atomic<size_t> calls_queued_{0};
  std::atomic<size_t> abandoned_writes_{0};
  std::atomic<int64_t> last_rx_ms_;
  std::atomic<int64_t> last_tx_ms_;
  BufferCache buffers_;  // has its own lock
  std::deque<std::unique_ptr<Request>> q_ GUARDED_BY(mu_);
  size_t send_idx_ GUARDED_BY(mu_) = 0;  // q_[send_idx_] is the oldest request not fully sent
  size_t awaiting_ GUARDED_BY(mu_) = 0;  // requests in q_ that expect a reply
  uint64_t q_cost_ GUARDED_BY(mu_) = 0;  // their cost
  size_t own_ GUARDED_BY(mu_) = 0;  // PINGs and REVOKE_ACKs in q_
  size_t unacked_revokes_ GUARDED_BY(mu_) = 0;  // REVOKEs in, minus REVOKE_ACKs sent and off the queue
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  uint64_t rx_frames_ GUARDED_BY(mu_) = 0;  // frames received whole (replies and pushes)
  bool out_armed_ GUARDED_BY(mu_) = false;
  bool driven_ GUARDED_BY(mu_) = false;      // a caller receives (SubmitAndDrive)
  bool polled_ GUARDED_BY(mu_) = false;      // pollers receive (Progress), until poll_until_
  bool lease_timer_ GUARDED_BY(mu_) = false; // the worker checks the lease at poll_until_
  std::chrono::steady_clock::time_point poll_until_ GUARDED_BY(mu_);
  uint32_t interest_ GUARDED_BY(mu_) = EPOLLIN;

  FrameReader reader_ GUARDED_BY(mu_);
  wire::FrameHeader cur_ GUARDED_BY(mu_);  // of the frame being read
  bool rx_push_ GUARDED_BY(mu_) = false;   // that frame is a push, not a reply
};


// Builds a request; the stream assigns its id and header at Submit.
std::unique_ptr<Request> MakeRequest(wire::MsgType type, std::vector<uint8_t> body,
                                     std::shared_ptr<Completion> done);

}  // namespace hixl::tcp
