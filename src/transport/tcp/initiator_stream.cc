#include "transport/tcp/initiator_stream.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>

#include "common/fork_fds.h"
#include "common/log.h"

namespace hixl::tcp {
namespace {

// Status codes a target may report; anything else counts as FAILED.
Status WireStatus(uint32_t s) {
  switch (s) {
    case SUCCESS:
    case PARAM_INVALID:
    case TIMEOUT:
    case NOT_CONNECTED:
    case NOTIFY_FAILED:
    case UNSUPPORTED:
    case RESOURCE_EXHAUSTED:
    case FAILED:
      return s;
    default:
      return FAILED;
  }
}

// Requests the stream makes itself, for no caller.
bool IsOwn(wire::MsgType t) { return t == wire::MsgType::kPing || t == wire::MsgType::kRevokeAck; }

}  // namespace

std::unique_ptr<Request> MakeRequest(wire::MsgType type, std::vector<uint8_t> body,
                                     std::shared_ptr<Completion> done) {
  auto r = std::make_unique<Request>();
  r->type = type;
  r->body = std::move(body);
  r->done = std::move(done);
  return r;
}

InitiatorStream::InitiatorStream(int fd, IoWorker *worker, std::string name, PushHandler on_push,
                                 std::function<void()> before_close, std::function<void()> on_abandoned_done)
    : fd_(fd),
      polled_fd_(fd),
      worker_(worker),
      name_(std::move(name)),
      on_push_(std::move(on_push)),
      before_close_(std::move(before_close)),
      on_abandoned_done_(std::move(on_abandoned_done)),
      last_rx_ms_(SteadyMillis()),
      last_tx_ms_(last_rx_ms_.load()) {}

InitiatorStream::~InitiatorStream() {
  CloseKeptFd(fd_);
}

void InitiatorStream::EnqueueLocked(std::vector<std::unique_ptr<Request>> *reqs) {
  for (auto &r : *reqs) {
    r->req_id = r->type == wire::MsgType::kRevokeAck ? r->wire_id : next_id_++;  // (a REVOKE's id may be 0)
    r->seq = next_seq_++;
    wire::FrameHeader h;
    h.type = r->type;
    h.req_id = r->req_id;
    h.body_len = static_cast<uint32_t>(r->body.size());
    h.payload_len = IovBytes(r->payload);
    wire::EncodeHeader(h, r->hdr);
    r->out.clear();
    r->out.reserve(2 + r->payload.size());
    r->out.push_back({r->hdr, wire::kHeaderSize});
    if (!r->body.empty()) r->out.push_back({r->body.data(), r->body.size()});
    r->out.insert(r->out.end(), r->payload.begin(), r->payload.end());
    r->out_cursor.Reset(&r->out);
    if (IsOwn(r->type)) ++own_;
    if (wire::ExpectsReply(r->type)) {
      r->cost = wire::kHeaderSize + h.body_len + h.payload_len + r->in_len;
      q_cost_ += r->cost;
      ++awaiting_;
    }
    if (r->type == wire::MsgType::kRevokeAck) {
      // Ahead of every request not yet begun on the wire: the target's
      // DeregisterMem waits for it, not for our transfers queued here. (It
      // gets no reply, so the replies still match the requests in order;
      // its seq is that of the request it goes before, keeping q_ sorted.)
      // Not into one that is partly on the wire: begun, or cut by a timeout
      // (its cursor was reset to the padding that completes the frame).
      size_t at = send_idx_;
      while (at < q_.size() && (q_[at]->out_cursor.started() || q_[at]->abandoned)) ++at;
      if (at < q_.size()) {
        r->seq = q_[at]->seq;
        q_.insert(q_.begin() + static_cast<std::ptrdiff_t>(at), std::move(r));
        continue;
      }
    }
    q_.push_back(std::move(r));
  }
  reqs->clear();
  PublishCountsLocked();
}

void InitiatorStream::ForgetLocked(const Request &r) {
  if (IsOwn(r.type)) --own_;
  if (!wire::ExpectsReply(r.type)) return;
  q_cost_ -= r.cost;
  --awaiting_;
}

void InitiatorStream::PublishCountsLocked() {
  queued_.store(q_.size(), std::memory_order_relaxed);
  calls_queued_.store(q_.size() - own_, std::memory_order_relaxed);
}

void InitiatorStream::PumpLocked(FinishedList *fin, bool force) {
  for (;;) {
    std::vector<std::unique_ptr<Request>> batch;
    {
      MutexLock lock(&sub_mu_);
      // Requests may wait only while a reply is due (whoever processes it
      // comes back here) and enough is in flight to keep the target busy.
      const bool hold = fd_ >= 0 && awaiting_ > 0 && q_cost_ >= kHoldBytes;
      if (inbox_.empty() || (hold && !force)) {
        may_hold_ = hold;
        return;
      }
      batch.swap(inbox_);
    }
    if (fd_ < 0) {
      for (auto &r : batch) fin->push_back(Finished{std::move(r), FAILED, {}});
      continue;
    }
    EnqueueLocked(&batch);
    // Waiting for room: the worker sends as the socket drains.
    if (!out_armed_) SendLocked(fin);
  }
}

bool InitiatorStream::Submit(std::vector<std::unique_ptr<Request>> *reqs, bool may_wait) {
  if (!Enqueue(reqs)) return false;
  Flush(may_wait);
  return true;
}

bool InitiatorStream::Enqueue(std::vector<std::unique_ptr<Request>> *reqs) {
  MutexLock lock(&sub_mu_);
  if (inbox_closed_) return false;
  for (auto &r : *reqs) inbox_.push_back(std::move(r));
  reqs->clear();
  return true;
}

void InitiatorStream::Flush(bool may_wait) {
  {
    MutexLock lock(&sub_mu_);
    if (may_wait && may_hold_) return;
  }
  // Inline send: saves a thread hand-off on the latency path.
  FinishedList fin;
  {
    MutexLock lock(&mu_);
    PumpLocked(&fin, /*force=*/!may_wait);
  }
  Complete(&fin);
}

void InitiatorStream::Progress() {
  if (closed_.load(std::memory_order_relaxed) || !mu_.TryLock()) return;
  FinishedList fin;
  {
    MutexLock lock(&mu_, std::adopt_lock);
    PumpLocked(&fin, /*force=*/false);
    if (fd_ >= 0 && awaiting_ > 0) {
      poll_until_ = std::chrono::steady_clock::now() + kPollLease;
      if (!polled_) {
        polled_ = true;
        ApplyInterestLocked();
      }
      if (!lease_timer_) ArmLeaseTimerLocked();
      RecvLocked(&fin);
      PumpLocked(&fin, /*force=*/false);
    }
  }
  Complete(&fin);
}

void InitiatorStream::ArmLeaseTimerLocked() {
  lease_timer_ = true;
  worker_->PostAt(poll_until_, [w = weak_from_this()] {
    if (auto s = w.lock()) s->OnLeaseTimer();
  });
}

void InitiatorStream::OnLeaseTimer() {
  MutexLock lock(&mu_);
  lease_timer_ = false;
  if (!polled_ || fd_ < 0) return;
  if (std::chrono::steady_clock::now() < poll_until_) {
    ArmLeaseTimerLocked();  // polled again meanwhile
    return;
  }
  // The polls stopped: the worker receives again (level-triggered, so
  // whatever arrived meanwhile is reported at once).
  polled_ = false;
  ApplyInterestLocked();
}

bool InitiatorStream::SubmitAndDrive(std::vector<std::unique_ptr<Request>> *reqs, Deadline deadline) {
  FinishedList fin;
  int fd;
  uint64_t last_seq;
  {
    UniqueLock lock(&mu_);
    if (fd_ >= 0) PumpLocked(&fin);  // what others posted goes first
    if (fd_ < 0) {
      lock.Unlock();
      Complete(&fin);
      return false;
    }
    bool nothing_outstanding = q_.empty();
    EnqueueLocked(reqs);
    last_seq = next_seq_ - 1;
    if (!nothing_outstanding || driven_) {
      // Others' requests are in flight: the worker receives for everyone.
      fd = -1;
    } else {
      driven_ = true;
      ApplyInterestLocked();
      fd = fd_;
    }
    if (!out_armed_) SendLocked(&fin);
    PumpLocked(&fin);
  }
  Complete(&fin);
  if (fd < 0) return true;
  for (;;) {
    {
      // Replies come in order: once the oldest outstanding request is newer
      // than ours (or none is left), ours are all answered.
      MutexLock lock(&mu_);
      if (fd_ != fd || q_.empty() || q_.front()->seq > last_seq) break;
    }
    int ms = deadline.RemainingMillis();
    if (ms <= 0) break;
    // The fd is only polled here; every read happens under the lock, which
    // also tells us whether the stream was closed meanwhile.
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, std::min(ms, 50));
    if (n < 0 && errno != EINTR) break;
    {
      MutexLock lock(&mu_);
      if (fd_ != fd) break;
      if (n > 0) RecvLocked(&fin);
      PumpLocked(&fin);
    }
    Complete(&fin);
  }
  MutexLock lock(&mu_);
  driven_ = false;
  ApplyInterestLocked();  // the worker receives again (level-triggered: nothing is missed)
  return true;
}

void InitiatorStream::Cancel(const Completion *c) {
  FinishedList fin;
  {
    MutexLock lock(&mu_);
    {
      // Never reached the wire. Dropped requests still complete (FAILED; a
      // no-op for a completion already finished): whoever waits on them,
      // e.g. a relay round holding a staging buffer, must hear of it.
      MutexLock sub(&sub_mu_);
      auto keep =
          std::stable_partition(inbox_.begin(), inbox_.end(), [c](const auto &r) { return r->done.get() != c; });
      for (auto it = keep; it != inbox_.end(); ++it) fin.push_back(Finished{std::move(*it), FAILED, {}});
      inbox_.erase(keep, inbox_.end());
    }
    for (size_t i = 0; i < q_.size();) {
      Request *r = q_[i].get();
      if (r->done.get() != c || r->abandoned) {
        ++i;
        continue;
      }
      if (i >= send_idx_ && !r->out_cursor.started()) {
        ForgetLocked(*r);
        fin.push_back(Finished{std::move(q_[i]), FAILED, {}});
        q_.erase(q_.begin() + static_cast<std::ptrdiff_t>(i));  // never reached the wire
        continue;
      }
      if (!r->out_cursor.done() && !r->payload.empty()) PadCutWriteLocked(r);
      r->abandoned = true;
      if (r->type == wire::MsgType::kWriteReq) abandoned_writes_.fetch_add(1, std::memory_order_acq_rel);
      if (i == 0 && !r->stage_in) reader_.SkipRestOfPayload();
      r->in.clear();
      ++i;
    }
    PublishCountsLocked();
    PumpLocked(&fin);
  }
  Complete(&fin);
}

void InitiatorStream::PadCutWriteLocked(Request *r) {
  if (!r->staged.empty()) return;  // the payload is our own copy: it may go on
  // The target counts on payload_len bytes, so the stream must carry them,
  // but no longer from the caller's buffers: the rest is zeros. What a WRITE
  // that failed leaves in its remote range is unspecified anyway; closing
  // the stream instead would fail every other request on it.
  static uint8_t zeros[256u << 10];  // never written
  const size_t left = r->out_cursor.left();
  const size_t payload_left = std::min(left, IovBytes(r->payload));
  // What is left of the header and body (the request's own memory) goes
  // first: they are the first two entries of `out`, so within 3 iovecs.
  iovec head[3];
  const size_t k = r->out_cursor.Gather(head, 3);
  std::vector<iovec> out;
  for (size_t i = 0, need = left - payload_left; i < k && need > 0; ++i) {
    const size_t n = std::min(head[i].iov_len, need);
    out.push_back({head[i].iov_base, n});
    need -= n;
  }
  for (size_t pad = payload_left; pad > 0;) {
    const size_t n = std::min(pad, sizeof(zeros));
    out.push_back({zeros, n});
    pad -= n;
  }
  r->payload.clear();
  r->out = std::move(out);
  r->out_cursor.Reset(&r->out);
}

void InitiatorStream::Close(const char *why) {
  FinishedList fin;
  {
    MutexLock lock(&mu_);
    CloseLocked(why, &fin);
    PumpLocked(&fin);
  }
  Complete(&fin);
}

void InitiatorStream::OnShutdown() { Close("engine is finalizing"); }

void InitiatorStream::OnEvents(uint32_t events) {
  FinishedList fin;
  {
    MutexLock lock(&mu_);
    if (fd_ < 0) return;
    if (events & EPOLLOUT) SendLocked(&fin);
    if (fd_ >= 0 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) RecvLocked(&fin);
    PumpLocked(&fin, /*force=*/false);
  }
  Complete(&fin);
}

void InitiatorStream::SendLocked(FinishedList *fin) {
  if (fd_ < 0) return;
  // (q_[send_idx_], if any, is not done: send_idx_ would be past it.)
  const size_t left_before = send_idx_ < q_.size() ? q_[send_idx_]->out_cursor.left() : 0;
  // The analysis does not see that SendCursors calls the lambda here, under mu_.
  auto cursor_at = [this](size_t i) NO_THREAD_SAFETY_ANALYSIS { return &q_[send_idx_ + i]->out_cursor; };
  IoResult r = SendCursors(fd_, q_.size() - send_idx_, cursor_at);
  // For the heartbeat: the peer taking our bytes shows it alive too.
  if (send_idx_ < q_.size() && q_[send_idx_]->out_cursor.left() != left_before) {
    last_tx_ms_.store(SteadyMillis(), std::memory_order_relaxed);
  }
  while (send_idx_ < q_.size() && q_[send_idx_]->out_cursor.done()) ++send_idx_;
  PopUnansweredLocked(fin);
  if (r == IoResult::kError) {
    CloseLocked(std::string("send failed: ") + std::strerror(errno), fin);
    return;
  }
  SetOutLocked(r == IoResult::kWouldBlock);
}

void InitiatorStream::SetOutLocked(bool on) {
  if (on == out_armed_) return;
  out_armed_ = on;
  ApplyInterestLocked();
}

void InitiatorStream::ApplyInterestLocked() {
  if (fd_ < 0) return;
  uint32_t want =
      (driven_ || polled_ ? 0u : static_cast<uint32_t>(EPOLLIN)) | (out_armed_ ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  if (want == interest_) return;
  if (worker_->Modify(this, want)) {
    interest_ = want;
  } else {
    HIXL_LOGE("%s: epoll MOD failed: %s", name_.c_str(), std::strerror(errno));
  }
}

void InitiatorStream::RecvLocked(FinishedList *fin) {
  reader_.Rearm();  // called when the socket is, or may be, readable
  bool received = false;
  while (fd_ >= 0) {
    FrameReader::Part done;
    IoResult r = reader_.Next(fd_, &done);
    if (r == IoResult::kWouldBlock) break;
    if (r == IoResult::kEof) {
      CloseLocked(q_.empty() ? "peer closed the link" : "peer closed the link with requests in flight", fin);
      return;
    }
    if (r == IoResult::kError) {
      CloseLocked(std::string("receive failed: ") + std::strerror(errno), fin);
      return;
    }
    received = true;
    switch (done) {
      case FrameReader::Part::kHeader:
        if (!OnHeaderLocked(fin)) return;
        break;
      case FrameReader::Part::kBody:
        EndOfBodyLocked(fin);
        break;
      case FrameReader::Part::kPayload:
      case FrameReader::Part::kSkipped:
        FinishFrontLocked(fin);
        break;
    }
  }
  // For the heartbeat: one clock read per call, not per frame. A part cut
  // by EAGAIN counts when it completes (frames are at most 4 MiB).
  if (received) last_rx_ms_.store(SteadyMillis(), std::memory_order_relaxed);
}

bool InitiatorStream::OnHeaderLocked(FinishedList *fin) {
  wire::HeaderError err = reader_.TakeHeader(&cur_);
  std::string bad;
  rx_push_ = err == wire::HeaderError::kOk && cur_.type == wire::MsgType::kRevoke;
  if (err != wire::HeaderError::kOk) {
    bad = std::string("bad reply header: ") + wire::HeaderErrorName(err);
  } else if (rx_push_) {
    if (!on_push_) {
      bad = "REVOKE on a stream other than the link's control stream";
    } else if (cur_.body_len < 16 || cur_.body_len > 64 || cur_.payload_len != 0) {
      bad = "malformed REVOKE";
    } else if (++unacked_revokes_ > kMaxUnackedRevokes) {
      bad = "more than " + std::to_string(kMaxUnackedRevokes) + " REVOKEs without taking their acknowledgements";
    }
  } else if (send_idx_ == 0) {
    bad = std::string("unexpected ") + wire::MsgTypeName(cur_.type) + " with no request outstanding";
  } else {
    const Request &front = *q_.front();
    bool read_ok = cur_.type == wire::MsgType::kReadResp && cur_.status == SUCCESS;
    uint64_t want_payload = read_ok ? front.in_len : 0;
    uint32_t max_body = cur_.type == wire::MsgType::kRegionsResp ? wire::kMaxBody : 0;
    if (cur_.type != wire::ReplyOf(front.type) || cur_.req_id != front.req_id) {
      bad = std::string("reply ") + wire::MsgTypeName(cur_.type) + " #" + std::to_string(cur_.req_id) +
            " does not match request " + wire::MsgTypeName(front.type) + " #" + std::to_string(front.req_id);
    } else if (cur_.payload_len != want_payload || cur_.body_len > max_body) {
      bad = std::string("reply ") + wire::MsgTypeName(cur_.type) + " has payload " +
            std::to_string(cur_.payload_len) + " (want " + std::to_string(want_payload) + "), body " +
            std::to_string(cur_.body_len);
    }
  }
  if (!bad.empty()) {
    CloseLocked("protocol error: " + bad, fin);
    return false;
  }
  if (cur_.body_len > 0) {
    reader_.ExpectBody(cur_.body_len);
  } else {
    EndOfBodyLocked(fin);  // (a push always has a body)
  }
  return true;
}

void InitiatorStream::EndOfBodyLocked(FinishedList *fin) {
  if (cur_.payload_len > 0) {
    StartPayloadLocked();
  } else {
    FinishFrontLocked(fin);
  }
}

void InitiatorStream::StartPayloadLocked() {
  Request &r = *q_.front();
  if (r.abandoned) {
    reader_.SkipPayload(cur_.payload_len);
  } else if (r.stage_in) {
    // PlanFrames took the staging buffer, in_len bytes.
    r.staged_iov.assign(1, iovec{r.staged.data(), r.staged.size()});
    reader_.ExpectPayload(&r.staged_iov, cur_.payload_len);
  } else {
    reader_.ExpectPayload(&r.in, cur_.payload_len);
  }
}

void InitiatorStream::FinishFrontLocked(FinishedList *fin) {
  Finished f;
  if (rx_push_) {
    f.status = SUCCESS;
    f.body = reader_.TakeBody();
    f.push_type = cur_.type;
    f.push_id = cur_.req_id;
    f.rx_order = ++rx_frames_;
    reader_.ExpectHeader();
    rx_push_ = false;
    fin->push_back(std::move(f));
    return;
  }
  f.req = std::move(q_.front());
  q_.pop_front();
  ForgetLocked(*f.req);
  if (f.req->abandoned && f.req->type == wire::MsgType::kWriteReq) {
    abandoned_writes_.fetch_sub(1, std::memory_order_acq_rel);  // applied (or refused): nothing of it is left to land
  }
  // A staged READ reply lands in the user's buffers now, under the lock
  // that Cancel takes: an abandoned request is never copied out.
  if (f.req->stage_in && !f.req->abandoned && cur_.payload_len > 0) ScatterFrom(f.req->staged.data(), f.req->in);
  --send_idx_;
  f.status = WireStatus(cur_.status);
  f.rx_order = ++rx_frames_;
  // The batch was checked against the target's regions before it was sent:
  // a refusal now means a region went away meanwhile (our copy of the table
  // was stale). This frame moved nothing, but others of the batch may have:
  // the batch's completion tells (see kRefused).
  const bool data_frame = f.req->type == wire::MsgType::kWriteReq || f.req->type == wire::MsgType::kReadReq;
  if (f.status == PARAM_INVALID && data_frame) {
    f.status = kRefused;
  }
  f.body = reader_.TakeBody();
  reader_.ExpectHeader();
  fin->push_back(std::move(f));
  PopUnansweredLocked(fin);  // also publishes the counts
}

void InitiatorStream::PopUnansweredLocked(FinishedList *fin) {
  while (!q_.empty() && !wire::ExpectsReply(q_.front()->type) && q_.front()->out_cursor.done()) {
    if (q_.front()->type == wire::MsgType::kRevokeAck && unacked_revokes_ > 0) --unacked_revokes_;
    ForgetLocked(*q_.front());
    fin->push_back(Finished{std::move(q_.front()), SUCCESS, {}});
    q_.pop_front();
    --send_idx_;
  }
  PublishCountsLocked();
}

void InitiatorStream::CloseLocked(const std::string &why, FinishedList *fin) {
  if (fd_ < 0) return;
  if (q_.size() == own_) {  // nothing of a caller's fails
    HIXL_LOGI("%s: closing: %s", name_.c_str(), why.c_str());
  } else {
    HIXL_LOGE_RL("%s: closing with %zu request(s) in flight, which fail: %s", name_.c_str(), q_.size(), why.c_str());
  }
  for (auto &r : q_) fin->push_back(Finished{std::move(r), FAILED, {}});
  q_.clear();
  send_idx_ = 0;
  awaiting_ = 0;
  q_cost_ = 0;
  unacked_revokes_ = 0;
  own_ = 0;
  {
    // Later posts fail at once; what waits in the inbox fails in PumpLocked.
    MutexLock sub(&sub_mu_);
    inbox_closed_ = true;
  }
  PublishCountsLocked();
  abandoned_writes_.store(0, std::memory_order_release);
  closed_.store(true);
  if (before_close_) before_close_();
  worker_->Remove(this);  // before close: see IoWorker::Remove
  shutdown(fd_, SHUT_RDWR);
  CloseKeptFd(fd_);
  fd_ = -1;
  polled_fd_.store(-1);
}

void InitiatorStream::Complete(FinishedList *fin) {
  bool abandoned_write = false;
  for (auto &f : *fin) {
    if (f.req == nullptr) {
      if (on_push_) on_push_(*this, f.push_type, f.push_id, std::move(f.body), f.rx_order);
      continue;
    }
    abandoned_write = abandoned_write || (f.req->abandoned && f.req->type == wire::MsgType::kWriteReq);
    if (f.status == SUCCESS && f.req->on_reply && !f.req->abandoned) f.req->on_reply(std::move(f.body), f.rx_order);
    if (f.req->done) f.req->done->PartDone(f.status);
    buffers_.Give(std::move(f.req->staged));
  }
  fin->clear();
  if (abandoned_write && on_abandoned_done_) on_abandoned_done_();
}

}  // namespace hixl::tcp
