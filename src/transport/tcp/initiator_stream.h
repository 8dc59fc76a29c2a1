// initiator_stream.h: one TCP stream of a link, on the side that connected.
//
// Requests are queued in order and sent pipelined; the target answers them in
// the same order, so the stream matches each reply to the oldest request.
// The payload of a WRITE is sent straight from the user's buffers and the
// payload of a READ reply is received straight into them. All socket I/O
// happens under the stream's mutex: whoever holds it (an I/O worker, a
// caller sending inline, or a caller receiving its own replies in
// SubmitAndDrive) is the only one touching user memory, which is what lets
// Cancel() promise that nobody touches a request's buffers afterwards.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/completion.h"
#include "transport/tcp/io_worker.h"
#include "transport/tcp/iov.h"
#include "wire/frame.h"

namespace hixl::tcp {

struct Request {
  wire::MsgType type = wire::MsgType::kPing;
  uint64_t req_id = 0;
  uint64_t wire_id = 0;          // if set, sent instead of a fresh id (REVOKE_ACK echoes its REVOKE)
  uint64_t seq = 0;              // the stream's own running count, for SubmitAndDrive
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
  // Control replies (regions, notify): gets the reply body on success.
  std::function<void(std::vector<uint8_t> &&)> on_reply;

  // Stream-private state.
  std::vector<iovec> out;  // hdr + body + payload
  IovCursor out_cursor;
  std::vector<iovec> staged_iov;
  bool abandoned = false;  // cancelled: reply is read and dropped
};

class InitiatorStream : public Pollable, public std::enable_shared_from_this<InitiatorStream> {
 public:
  // Frames the target sends unasked (REVOKE), with their req_id and body.
  // Called on the worker thread, without the stream's lock, in arrival order
  // relative to the replies before and after them.
  using PushHandler =
      std::function<void(InitiatorStream &stream, wire::MsgType type, uint64_t id, std::vector<uint8_t> &&body)>;

  InitiatorStream(int fd, IoWorker *worker, std::string name, PushHandler on_push = nullptr);
  ~InitiatorStream() override;

  int fd() const override { return polled_fd_.load(); }
  void OnEvents(uint32_t events) override;
  void OnShutdown() override;

  // Queues `reqs` in order and starts sending (inline when the stream was
  // idle). Never blocks on the wire. Returns false, leaving `reqs` as they
  // are, when the stream is closed.
  bool Submit(std::vector<std::unique_ptr<Request>> *reqs);
  // Submit, and if the stream was idle, receive the replies on the calling
  // thread until these requests are answered, the stream closes or
  // `deadline` passes: a small synchronous transfer then costs one wake-up,
  // as a plain request/response would, instead of waking the I/O worker and
  // then the caller. Returns false, leaving `reqs`, when the stream is closed.
  bool SubmitAndDrive(std::vector<std::unique_ptr<Request>> *reqs, Deadline deadline);
  // After it returns, no request of `c` is sent or received into user memory
  // any more. A WRITE cut in the middle of its payload closes the stream.
  void Cancel(const Completion *c);
  // Fails every queued request with FAILED and closes the socket.
  void Close(const char *why);
  bool closed() const { return closed_.load(); }
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // When bytes last arrived (or the stream opened), steady-clock ms.
  int64_t last_rx_ms() const { return last_rx_ms_.load(std::memory_order_relaxed); }
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
  };
  using FinishedList = std::vector<Finished>;

  void SendLocked(FinishedList *fin);
  void RecvLocked(FinishedList *fin);
  bool OnHeaderLocked(FinishedList *fin);  // false: protocol error (stream closed)
  void FinishFrontLocked(FinishedList *fin);
  // The front request's reply payload starts: where it goes.
  void StartPayloadLocked();
  // Completes the requests at the front that expect no reply and are sent.
  void PopUnansweredLocked(FinishedList *fin);
  void CloseLocked(const std::string &why, FinishedList *fin);
  void SetOutLocked(bool on);
  // Tells the worker what to watch: EPOLLIN unless a caller is driving the
  // receive side, EPOLLOUT while sends wait for room.
  void ApplyInterestLocked();
  bool EnqueueLocked(std::vector<std::unique_ptr<Request>> *reqs);  // true when the stream was idle
  void Complete(FinishedList *fin);

  std::mutex mu_;
  int fd_;                       // under mu_
  std::atomic<int> polled_fd_;   // fd_ as seen by the worker, without mu_
  IoWorker *worker_;
  const std::string name_;
  const PushHandler on_push_;
  std::atomic<bool> closed_{false};
  std::atomic<size_t> queued_{0};
  std::atomic<int64_t> last_rx_ms_;
  BufferCache buffers_;
  std::deque<std::unique_ptr<Request>> q_;
  size_t send_idx_ = 0;  // q_[send_idx_] is the oldest request not fully sent
  uint64_t next_id_ = 1;
  uint64_t next_seq_ = 1;
  bool out_armed_ = false;
  bool driven_ = false;      // a caller receives (SubmitAndDrive)
  uint32_t interest_ = EPOLLIN;

  enum class Rx { kHeader, kBody, kPayload, kDiscard };
  Rx rx_ = Rx::kHeader;
  bool rx_push_ = false;  // the frame being read is a push, not a reply
  RxBuffer rxbuf_;
  wire::FrameHeader cur_;
  std::vector<uint8_t> body_;
  std::vector<iovec> body_iov_;
  IovCursor part_;
  size_t part_left_ = 0;
};

int64_t SteadyMillis();

// Builds a request; the stream assigns its id and header at Submit.
std::unique_ptr<Request> MakeRequest(wire::MsgType type, std::vector<uint8_t> body,
                                     std::shared_ptr<Completion> done);

}  // namespace hixl::tcp
