#include "transport/tcp/target_stream.h"

#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/fork_fds.h"
#include "common/log.h"
#include "memory/host/page_access.h"

namespace hixl::tcp {
namespace {

// Replies queued beyond this count, or holding more than this much memory
// (copies of small segments, iovec lists), stop the stream from reading more
// requests, so that a peer which sends READs and never reads the replies
// cannot pin or allocate memory without bound.
constexpr size_t kMaxQueuedReplies = 64;
constexpr size_t kMaxQueuedReplyBytes = 16u << 20;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Largest body each request type may carry.
uint32_t MaxBody(wire::MsgType t) {
  switch (t) {
    case wire::MsgType::kHello: return wire::kMaxHelloBody;
    case wire::MsgType::kAuth: return 64;  // the proof, and room for more
    case wire::MsgType::kRegionsReq:
    case wire::MsgType::kUsing: return 64;  // a few fields, and room for more (protocol.md)
    case wire::MsgType::kWriteReq:
    case wire::MsgType::kReadReq: return static_cast<uint32_t>(wire::SegmentsBodySize(wire::kMaxSegmentsPerFrame));
    case wire::MsgType::kNotifyReq: return static_cast<uint32_t>(8 + 2 * wire::kMaxNotifyField);
    default: return 0;
  }
}

}  // namespace

TargetStream::TargetStream(int fd, IoWorker *worker, PeerHandler *handler, std::string peer)
    : fd_(fd), worker_(worker), handler_(handler), peer_(std::move(peer)), who_(peer_) {
  created_ = last_progress_ = last_rx_ = last_tx_ = std::chrono::steady_clock::now();
  NoteActive();
  interest_ = EPOLLIN;
}

TargetStream::~TargetStream() {
  CloseKeptFd(fd_);
}

void TargetStream::OnEvents(uint32_t events) {
  if (fd_ < 0) return;
  if (draining_) {
    Drain();
    return;
  }
  BeginTurn();
  if (events & EPOLLOUT) Send();
  if (fd_ >= 0 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
    last_rx_ = now_;
    reader_.Rearm();  // the socket was reported readable
    Recv();
  }
  Settle();
}

void TargetStream::ResumeRead() {
  resume_posted_ = false;
  if (fd_ < 0 || draining_) return;
  BeginTurn();
  reader_.Rearm();  // there may be more in the socket too
  Recv();
  Settle();
}

void TargetStream::Settle() {
  // Requests already read that stopped for backpressure go on once sending
  // has made room: their bytes are in the reader, not the socket, so no
  // EPOLLIN would come for them.
  if (fd_ >= 0 && held_ && !draining_ && !Backlogged()) Recv();
  if (fd_ >= 0) UpdateInterest();
}

bool TargetStream::Backlogged() const {
  return tx_.size() >= kMaxQueuedReplies || tx_bytes_ >= kMaxQueuedReplyBytes;
}

void TargetStream::OnTick(std::chrono::steady_clock::time_point now) {
  if (fd_ < 0 || draining_) return;  // a draining peer is waited for, however long it takes
  if (!hello_done_ && now - created_ > kHandshakeTimeout) {
    CloseStream("no handshake within 10 s", true);
    return;
  }
  // Alive: bytes came in, or the replies we send are being taken (an
  // initiator receiving a long READ has nothing to send meanwhile).
  if (heartbeat_ms_ > 0 && now - std::max(last_rx_, last_tx_) > 3 * std::chrono::milliseconds(heartbeat_ms_)) {
    HangUp("no heartbeat from the initiator for 3 intervals of " + std::to_string(heartbeat_ms_) + " ms", true);
    return;
  }
  TrimIfIdle(now);
  bool holds_revoked = payload_pins_.AnyRevoked();
  for (const auto &r : tx_) holds_revoked = holds_revoked || r->pins.AnyRevoked();
  if (!holds_revoked) {
    revoked_since_.reset();
    return;
  }
  if (!revoked_since_) revoked_since_ = now;
  // Our sends come only when the kernel has room for a good part of its
  // buffers: a peer that reads slowly takes bytes for a second or more
  // before one. The bytes still queued in the kernel tell sooner.
  int queued = 0;
  if (ioctl(fd_, SIOCOUTQ, &queued) == 0 && queued != kernel_queued_) {
    kernel_queued_ = queued;
    last_progress_ = now;
  }
  // A WRITE into such a region: whatever arrives is its payload.
  if (payload_pins_.AnyRevoked()) last_progress_ = std::max(last_progress_, last_rx_);
  if (now - last_progress_ > kRevokeStall) {
    HangUp("stalled for " + std::to_string(kRevokeStall.count()) +
               " ms while holding a region that is being deregistered",
           true);
  } else if (now - *revoked_since_ > kRevokeLimit) {
    HangUp("still holding a region that is being deregistered after " + std::to_string(kRevokeLimit.count()) +
               " s (moving too slowly)",
           true);
  }
}

void TargetStream::TrimIfIdle(std::chrono::steady_clock::time_point now) {
  if (!tx_.empty() || !reader_.at_header() || now - std::max(last_rx_, last_tx_) < kIdleTrim) return;
  buffers_.Clear();
  stage_ = ByteBuffer();
  std::vector<iovec>().swap(stage_iov_);
  std::vector<iovec>().swap(payload_iov_);
  std::vector<wire::Segment>().swap(segs_);
  reader_.TrimBody();
}

void TargetStream::DropIfNoHello(const std::string &why) {
  if (!hello_done_) CloseStream(why, /*error=*/false);  // info: under a flood, one line per connection
}

void TargetStream::OnShutdown() { CloseStream("engine is finalizing", false); }

void TargetStream::HangUp(const std::string &why, bool error) {
  if (fd_ < 0 || draining_) return;
  if (!direct_) {
    CloseStream(why, error);
    return;
  }
  if (error) {
    HIXL_LOGE_RL("serving %s: hanging up: %s; waiting for the peer, which copies into our memory itself, to close its end",
              who_.c_str(), why.c_str());
  } else {
    HIXL_LOGI_RL("serving %s: hanging up: %s; waiting for the peer, which copies into our memory itself, to close its end",
              who_.c_str(), why.c_str());
  }
  draining_ = true;
  tx_.clear();
  tx_bytes_ = 0;
  payload_pins_.Release();  // nothing more is received into our memory: Drain drops it
  shutdown(fd_, SHUT_WR);
  UpdateInterest();
}

void TargetStream::Drain() {
  static thread_local char sink[16384];
  for (int i = 0; i < 64; ++i) {
    ssize_t n = recv(fd_, sink, sizeof(sink), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    CloseStream(n == 0 ? "the peer closed its end after we hung up"
                       : std::string("the peer's end failed after we hung up: ") + std::strerror(errno),
                false);
    return;
  }
}

void TargetStream::CloseStream(const std::string &why, bool error) {
  if (fd_ < 0) return;
  awaiting_hello_.store(false, std::memory_order_relaxed);
  evictable_.store(false, std::memory_order_relaxed);
  if (error) {
    HIXL_LOGE_RL("serving %s: closing the stream: %s", who_.c_str(), why.c_str());
  } else {
    HIXL_LOGI_RL("serving %s: closing the stream: %s", who_.c_str(), why.c_str());
  }
  tx_.clear();
  tx_bytes_ = 0;
  payload_pins_.Release();
  worker_->Remove(this);  // before close: see IoWorker::Remove
  CloseKeptFd(fd_);
  fd_ = -1;
  // A closed peer cannot hold a stale region any more: its revocations are done.
  for (uint64_t id : revokes_) handler_->OnRevokeAck(id, this);
  revokes_.clear();
  if (control_) handler_->OnControlClosed(this);
}

void TargetStream::NoteActive() {
  last_active_ms_.store(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::max(last_rx_, last_tx_).time_since_epoch()).count(),
      std::memory_order_relaxed);
}

void TargetStream::EvictIfQuiet(const std::string &why) {
  if (fd_ < 0 || draining_ || direct_) return;
  if (std::chrono::steady_clock::now() - std::max(last_rx_, last_tx_) < kEvictQuiet) return;
  // Bytes the worker has not read yet: the peer is not quiet after all.
  int unread = 0;
  if (ioctl(fd_, FIONREAD, &unread) != 0 || unread > 0) return;
  CloseStream(why, /*error=*/false);  // info: the listener logs the eviction once
}

void TargetStream::UpdateInterest() {
  evictable_.store(!draining_ && !direct_, std::memory_order_relaxed);
  NoteActive();
  uint32_t want = 0;
  if (!close_after_flush_ && !Backlogged()) want |= EPOLLIN;
  if (!tx_.empty()) want |= EPOLLOUT;
  if (want != interest_ && worker_->Modify(this, want)) interest_ = want;
}

void TargetStream::Send() {
  if (tx_.empty()) return;
  const size_t left_before = tx_.front()->cursor.left();  // the front is never done here
  IoResult r = SendCursors(fd_, tx_.size(), [this](size_t i) { return &tx_[i]->cursor; });
  // The peer taking our bytes is progress towards the replies that pin
  // regions (they go out in order), however slowly (but see kRevokeLimit).
  if (tx_.front()->cursor.left() != left_before) last_tx_ = last_progress_ = now_;
  while (!tx_.empty() && tx_.front()->cursor.done()) {
    tx_bytes_ -= tx_.front()->bytes;
    buffers_.Give(std::move(tx_.front()->owned));
    tx_.pop_front();  // releases the pins of a READ reply
  }
  if (r == IoResult::kError) {
    CloseStream(std::string("send failed: ") + std::strerror(errno), true);
    return;
  }
  if (tx_.empty() && close_after_flush_) CloseStream("handshake refused", false);
}

void TargetStream::QueueReply(wire::MsgType type, uint32_t status, std::vector<uint8_t> body,
                              std::vector<iovec> payload, PinSet pins) {
  QueueFrame(type, status, cur_.req_id, std::move(body), std::move(payload), std::move(pins));
}

void TargetStream::PushRevoke(uint64_t id, const wire::RegionInfo &region) {
  if (fd_ < 0) {
    handler_->OnRevokeAck(id, this);
    return;
  }
  if (draining_) {  // cannot be sent: confirmed when the peer's end closes
    revokes_.push_back(id);
    return;
  }
  std::vector<uint8_t> body;
  wire::EncodeRevoke(region, &body);
  QueueFrame(wire::MsgType::kRevoke, SUCCESS, id, std::move(body), {}, PinSet());
  revokes_.push_back(id);
  BeginTurn();
  Send();
  Settle();
}

void TargetStream::HangUpIfRevokePending(uint64_t id) {
  if (fd_ < 0 || std::find(revokes_.begin(), revokes_.end(), id) == revokes_.end()) return;
  HangUp("the peer did not acknowledge a REVOKE in time", true);
}

void TargetStream::QueueFrame(wire::MsgType type, uint32_t status, uint64_t req_id, std::vector<uint8_t> body,
                              std::vector<iovec> payload, PinSet pins, ByteBuffer owned) {
  auto r = std::make_unique<Reply>();
  r->owned = std::move(owned);
  if (!r->owned.empty()) payload.assign(1, iovec{r->owned.data(), r->owned.size()});
  wire::FrameHeader h;
  h.type = type;
  h.status = status;
  h.req_id = req_id;
  h.body_len = static_cast<uint32_t>(body.size());
  h.payload_len = IovBytes(payload);
  wire::EncodeHeader(h, r->hdr);
  r->body = std::move(body);
  r->out.reserve(2 + payload.size());
  r->out.push_back({r->hdr, wire::kHeaderSize});
  if (!r->body.empty()) r->out.push_back({r->body.data(), r->body.size()});
  r->out.insert(r->out.end(), payload.begin(), payload.end());
  r->cursor.Reset(&r->out);
  r->pins = std::move(pins);
  r->bytes = r->owned.size() + r->out.size() * sizeof(iovec);
  tx_bytes_ += r->bytes;
  r->type = type;
  if (type == wire::MsgType::kRevoke && !tx_.empty()) {
    // Ahead of every reply not yet begun on the wire (a READ's may be
    // large): DeregisterMem waits for the peer's answer. The peer tells a
    // REVOKE from a reply by its type. Never ahead of a region table,
    // though: one made before the revocation may still hold the region, and
    // the peer applies tables and revocations by their place on the stream.
    size_t at = tx_.front()->cursor.started() ? 1 : 0;
    for (size_t i = tx_.size(); i > at; --i) {
      if (tx_[i - 1]->type == wire::MsgType::kRegionsResp || tx_[i - 1]->type == wire::MsgType::kHelloAck) {
        at = i;
        break;
      }
    }
    tx_.insert(tx_.begin() + static_cast<std::ptrdiff_t>(at), std::move(r));
    return;
  }
  tx_.push_back(std::move(r));
}

void TargetStream::Recv() {
  for (;;) {
    held_ = false;
    ReadRequests();
    if (fd_ < 0 || close_after_flush_ || draining_) return;
    if (!tx_.empty()) Send();
    // Sending made room for the requests already read: go on with them (no
    // EPOLLIN would come for them: they are no longer in the socket), unless
    // this call had its time (a peer whose requests are cheap fills the reply
    // queue again and again within one slice).
    if (fd_ < 0 || !held_ || Backlogged() || SliceSpent()) return;
  }
}

void TargetStream::BeginTurn() { now_ = slice_start_ = std::chrono::steady_clock::now(); }

bool TargetStream::SliceSpent() {
  if (std::chrono::steady_clock::now() - slice_start_ <= kReadSlice) return false;
  if (!resume_posted_) {
    resume_posted_ = worker_->Post([w = weak_from_this()] {
      if (auto s = w.lock()) s->ResumeRead();
    });
  }
  return true;
}

void TargetStream::ReadRequests() {
  for (unsigned parts = 0; fd_ >= 0 && !close_after_flush_ && !draining_; ++parts) {
    // Backpressure: stop taking requests while replies pile up; Recv or
    // Settle comes back here when Send has made room.
    if (reader_.at_header() && Backlogged()) {
      held_ = true;
      break;
    }
    // A peer sending without pause would keep this worker here: its other
    // streams and the tasks posted to it (a REVOKE that DeregisterMem waits
    // for) would wait as long. Go on after them: what is left may be in the
    // reader's buffer, not the socket, so no EPOLLIN would come for it.
    if (parts % 8 == 7 && SliceSpent()) break;
    FrameReader::Part done;
    IoResult r = reader_.Next(fd_, &done);
    if (r == IoResult::kWouldBlock) break;
    if (r == IoResult::kEof) {
      bool mid_frame = reader_.mid_frame();
      CloseStream(mid_frame ? "peer closed the stream mid-frame" : "peer closed the stream", mid_frame);
      return;
    }
    if (r == IoResult::kError) {
      CloseStream(std::string("receive failed: ") + std::strerror(errno), true);
      return;
    }
    switch (done) {
      case FrameReader::Part::kHeader:
        if (!OnHeader()) return;
        break;
      case FrameReader::Part::kBody:
        if (!OnRequest()) return;
        break;
      case FrameReader::Part::kPayload:
        // Only the end of a WRITE's payload lets go of regions on the
        // receiving side: other frames (a PING, a NO_DIRECT) are no
        // progress for the stall check, or a peer could send them to hold
        // a region pinned for ever.
        last_progress_ = now_;
        if (!payload_regions_.empty()) {
          std::string why;
          bool ok = StagedCopy(/*to_user=*/true, payload_iov_, payload_regions_, stage_.data(), &why);
          payload_pins_.Release();
          if (!ok) HIXL_LOGE_RL("serving %s: WRITE into device memory failed: %s", who_.c_str(), why.c_str());
          QueueReply(wire::MsgType::kWriteAck, ok ? SUCCESS : FAILED);
          reader_.ExpectHeader();
          break;
        }
        if (write_staged_) ScatterFrom(stage_.data(), payload_iov_);
        payload_pins_.Release();
        QueueReply(wire::MsgType::kWriteAck, SUCCESS);
        reader_.ExpectHeader();
        break;
      case FrameReader::Part::kSkipped:
        QueueReply(wire::MsgType::kWriteAck, PARAM_INVALID);  // the only payload skipped: a refused WRITE's
        reader_.ExpectHeader();
        break;
    }
  }
}

bool TargetStream::OnHeader() {
  wire::HeaderError err = reader_.TakeHeader(&cur_);
  if (err == wire::HeaderError::kBadVersion && !hello_done_) {
    // Tell the peer which version we speak, then hang up.
    return Refuse("protocol version " + std::to_string(cur_.version) + " is not supported; this engine speaks " +
                  std::to_string(wire::kVersion));
  }
  std::string bad;
  if (err != wire::HeaderError::kOk) {
    bad = wire::HeaderErrorName(err);
  } else if (!wire::IsRequest(cur_.type)) {
    bad = std::string(wire::MsgTypeName(cur_.type)) + " is not a request";
  } else if (auth_pending_ != (cur_.type == wire::MsgType::kAuth)) {
    bad = auth_pending_ ? std::string(wire::MsgTypeName(cur_.type)) + " instead of AUTH" : "AUTH unasked";
  } else if (!auth_pending_ && (cur_.type == wire::MsgType::kHello) == hello_done_) {
    bad = hello_done_ ? "second HELLO" : std::string(wire::MsgTypeName(cur_.type)) + " before HELLO";
  } else if (cur_.body_len > MaxBody(cur_.type)) {
    bad = std::string(wire::MsgTypeName(cur_.type)) + " body of " + std::to_string(cur_.body_len) +
          " bytes exceeds " + std::to_string(MaxBody(cur_.type));
  } else if (cur_.payload_len != 0 && cur_.type != wire::MsgType::kWriteReq) {
    bad = std::string(wire::MsgTypeName(cur_.type)) + " carries a payload";
  }
  if (!bad.empty()) {
    HangUp("protocol error: " + bad, true);
    return false;
  }
  if (cur_.type == wire::MsgType::kBye) {
    CloseStream("peer said goodbye", false);
    return false;
  }
  if (cur_.type == wire::MsgType::kUsing) {
    if (!control_) {
      HangUp("protocol error: USING on a stream other than a link's first", true);
      return false;
    }
    if (cur_.body_len > 0) {
      reader_.ExpectBody(cur_.body_len);
    } else {
      return OnRequest();  // (malformed: refused there)
    }
    return true;
  }
  if (cur_.type == wire::MsgType::kRevokeAck) {
    auto it = std::find(revokes_.begin(), revokes_.end(), cur_.req_id);
    if (it == revokes_.end() || cur_.body_len != 0) {
      HangUp("protocol error: REVOKE_ACK for unknown revocation " + std::to_string(cur_.req_id), true);
      return false;
    }
    revokes_.erase(it);
    handler_->OnRevokeAck(cur_.req_id, this);
    return true;
  }
  if (cur_.body_len == 0) return OnRequest();
  reader_.ExpectBody(cur_.body_len);
  return true;
}

bool TargetStream::OnRequest() {
  reader_.ExpectHeader();
  const std::vector<uint8_t> &req = reader_.body();
  switch (cur_.type) {
    case wire::MsgType::kHello:
      return OnHello();
    case wire::MsgType::kAuth:
      return OnAuth();
    case wire::MsgType::kWriteReq: {
      uint64_t total = 0;
      if (!wire::DecodeSegments(req.data(), req.size(), &segs_, &total) || total != cur_.payload_len) {
        HangUp("protocol error: malformed WRITE segment list (or payload " + std::to_string(cur_.payload_len) +
                        " != segment total " + std::to_string(total) + ")",
                    true);
        return false;
      }
      payload_pins_.Release();
      if (Resolve("WRITE", &payload_iov_, &payload_pins_, &payload_regions_)) {
        // Device memory: the payload lands in host memory, then the driver
        // copies it (a socket cannot write into a GPU).
        write_staged_ = !payload_regions_.empty() || Coalesce(cur_.payload_len, payload_iov_.size());
        if (write_staged_) {
          stage_.Resize(cur_.payload_len);
          stage_iov_.assign(1, iovec{stage_.data(), stage_.size()});
          reader_.ExpectPayload(&stage_iov_, cur_.payload_len);
        } else {
          reader_.ExpectPayload(&payload_iov_, cur_.payload_len);
        }
      } else {
        reader_.SkipPayload(cur_.payload_len);
      }
      return true;
    }
    case wire::MsgType::kReadReq: {
      uint64_t total = 0;
      if (!wire::DecodeSegments(req.data(), req.size(), &segs_, &total)) {
        HangUp("protocol error: malformed READ segment list", true);
        return false;
      }
      std::vector<iovec> iov;
      PinSet pins;
      std::vector<const Region *> regions;
      if (Resolve("READ", &iov, &pins, &regions)) {
        if (!regions.empty()) {
          // Device memory: copied out through the driver now, sent from host memory.
          ByteBuffer owned = buffers_.Take(total);
          std::string why;
          bool ok = StagedCopy(/*to_user=*/false, iov, regions, owned.data(), &why);
          pins.Release();
          if (ok) {
            QueueFrame(wire::MsgType::kReadResp, SUCCESS, cur_.req_id, {}, {}, PinSet(), std::move(owned));
          } else {
            HIXL_LOGE_RL("serving %s: READ from device memory failed: %s", who_.c_str(), why.c_str());
            QueueReply(wire::MsgType::kReadResp, FAILED);
          }
        } else if (Coalesce(total, iov.size())) {
          // Copy the small pieces out now: one iovec to send, no pins held.
          ByteBuffer owned = buffers_.Take(total);
          GatherInto(iov, owned.data());
          pins.Release();
          QueueFrame(wire::MsgType::kReadResp, SUCCESS, cur_.req_id, {}, {}, PinSet(), std::move(owned));
        } else {
          QueueReply(wire::MsgType::kReadResp, SUCCESS, {}, std::move(iov), std::move(pins));
        }
      } else {
        QueueReply(wire::MsgType::kReadResp, PARAM_INVALID);
      }
      return true;
    }
    case wire::MsgType::kNotifyReq: {
      wire::Notify n;
      if (!wire::DecodeNotify(req.data(), req.size(), &n)) {
        HangUp("protocol error: malformed NOTIFY", true);
        return false;
      }
      QueueReply(wire::MsgType::kNotifyAck, handler_->OnNotify(link_key_, peer_, std::move(n)));
      return true;
    }
    case wire::MsgType::kRegionsReq: {
      uint32_t first = 0;
      if (!wire::DecodeRegionsReq(req.data(), req.size(), &first)) {
        HangUp("protocol error: malformed REGIONS_REQ", true);
        return false;
      }
      std::vector<uint8_t> body;
      wire::EncodeRegionPage(handler_->Regions()->Page(first), &body);
      QueueReply(wire::MsgType::kRegionsResp, SUCCESS, std::move(body));
      return true;
    }
    case wire::MsgType::kUsing: {
      uint16_t transport = 0;
      if (!wire::DecodeUsing(req.data(), req.size(), &transport)) {
        HangUp("protocol error: malformed USING", true);
        return false;
      }
      // A peer that reaches our memory only through our sockets has its
      // stream closed for good when we end it, and later revocations need
      // not wait for it as for one that copies itself (those pending still
      // get its acknowledgement).
      direct_ = handler_->OnUsing(this, who_, transport) && direct_;
      return true;
    }
    case wire::MsgType::kPing:
      QueueReply(wire::MsgType::kPong, SUCCESS);
      return true;
    default:
      HangUp(std::string("protocol error: unexpected ") + wire::MsgTypeName(cur_.type), true);
      return false;
  }
}

bool TargetStream::OnHello() {
  wire::Hello hello;
  if (!wire::DecodeHello(reader_.body().data(), reader_.body().size(), &hello)) return Refuse("malformed HELLO");
  who_ = hello.initiator + " (" + peer_ + ")";
  const auth::Authenticator *key = handler_->authenticator();
  if (key == nullptr) return Admit(hello);
  // Nothing of ours (no region table, no byte of memory, not even whether
  // the dialed address is ours) before the peer proves it holds the key.
  if (!hello.has_auth) {
    return Refuse("peer requires authentication: this engine accepts only peers holding its key, and the HELLO "
                  "carries no proof (set auth.key_file or HIXL_AUTH_KEY_FILE)",
                  true);
  }
  wire::AuthChallenge challenge;
  if (!key->NewNonce(&challenge.nonce_t)) return Refuse("the target could not make a nonce");
  challenge.mac_t = key->Prove(auth::Role::kTarget, hello.auth_nonce, challenge.nonce_t, hello.initiator, hello.target);
  expect_mac_i_ =
      key->Prove(auth::Role::kInitiator, hello.auth_nonce, challenge.nonce_t, hello.initiator, hello.target);
  pending_hello_ = std::move(hello);
  auth_pending_ = true;
  std::vector<uint8_t> body;
  wire::EncodeAuthChallenge(challenge, &body);
  QueueReply(wire::MsgType::kAuthChallenge, SUCCESS, std::move(body));
  return true;
}

bool TargetStream::OnAuth() {
  auth_pending_ = false;
  wire::AuthBytes mac_i;
  const auth::Authenticator *key = handler_->authenticator();
  if (!wire::DecodeAuth(reader_.body().data(), reader_.body().size(), &mac_i) || key == nullptr ||
      !key->Same(mac_i, expect_mac_i_)) {
    return Refuse("authentication failed: the peer's proof does not match this engine's key", true);
  }
  return Admit(pending_hello_);
}

bool TargetStream::Refuse(const std::string &reason, bool auth) {
  wire::HelloAck ack;
  ack.reason = reason;
  std::vector<uint8_t> body;
  wire::EncodeHelloAck(ack, &body);
  QueueReply(wire::MsgType::kHelloAck, FAILED, std::move(body));
  // Who was refused, with the address (rate-limited: anyone may knock).
  if (auth) {
    HIXL_LOGW_RL("serving %s: refusing handshake: %s", who_.c_str(), reason.c_str());
  } else {
    HIXL_LOGE_RL("serving %s: refusing handshake: %s", who_.c_str(), reason.c_str());
  }
  close_after_flush_ = true;
  Send();
  return false;
}

bool TargetStream::Admit(const wire::Hello &hello) {
  wire::HelloAck ack;
  // Stream 0 is the link's control stream: counted among the peers to
  // revoke from before it gets the region table (a DeregisterMem from now
  // on reaches it: its REVOKE is posted to this thread, so it follows the
  // HELLO_ACK; one before left the region out of the table).
  control_ = hello.stream_index == 0;
  bool direct = false;
  Status s = handler_->OnHello(hello, control_ ? shared_from_this() : nullptr, fd_, &ack, &direct);
  direct_ = control_ && direct;
  if (s != SUCCESS) return Refuse(ack.reason);
  std::vector<uint8_t> body;
  wire::EncodeHelloAck(ack, &body);
  QueueReply(wire::MsgType::kHelloAck, s, std::move(body));
  hello_done_ = true;
  awaiting_hello_.store(false, std::memory_order_relaxed);
  link_key_ = hello.link_nonce;
  heartbeat_ms_ = hello.heartbeat_ms;
  HIXL_LOGI_RL("serving %s: stream %u/%u of link %s accepted", who_.c_str(), hello.stream_index + 1u,
            static_cast<unsigned>(hello.stream_count), Hex(hello.link_nonce).c_str());
  return true;
}

bool TargetStream::Resolve(const char *op, std::vector<iovec> *iov, PinSet *pins,
                           std::vector<const Region *> *regions) {
  const bool is_write = cur_.type == wire::MsgType::kWriteReq;
  auto table = handler_->Regions();
  iov->clear();
  iov->reserve(segs_.size());
  regions->clear();
  bool any_device = false;
  RegionTable::Ref hint = nullptr;
  for (size_t i = 0; i < segs_.size(); ++i) {
    const wire::Segment &s = segs_[i];
    RegionTable::Ref r = table->Find(s.addr, s.len, hint);
    if (r == nullptr || (r != hint && !pins->Add(*r))) {
      HIXL_LOGE_RL("serving %s: %s segment %zu of %zu (addr=%s len=%llu) is outside every registered region; "
                "refusing the request",
                who_.c_str(), op, i, segs_.size(), Hex(s.addr).c_str(), static_cast<unsigned long long>(s.len));
      pins->Release();
      iov->clear();
      return false;
    }
    hint = r;
    if (!Registry::Allows(**r, s.addr, s.len, is_write ? kPageWrite : kPageRead)) {
      HIXL_LOGE_RL("serving %s: %s segment %zu of %zu (addr=%s len=%llu) is in registered memory this process may not "
                "%s (see its protection); refusing the request",
                who_.c_str(), op, i, segs_.size(), Hex(s.addr).c_str(), static_cast<unsigned long long>(s.len),
                is_write ? "write" : "read");
      pins->Release();
      iov->clear();
      return false;
    }
    // Adjacent segments collapse into one iovec: fewer, longer copies
    // (within one region: a device copy names its region's device).
    const Region *device = (*r)->memory != &HostMemory() ? r->get() : nullptr;
    if (device != nullptr && !any_device) {
      any_device = true;
      regions->assign(iov->size(), nullptr);
    }
    auto *base = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(s.addr));
    if (!iov->empty() && static_cast<uint8_t *>(iov->back().iov_base) + iov->back().iov_len == base &&
        (!any_device || regions->back() == device)) {
      iov->back().iov_len += s.len;
    } else {
      iov->push_back({base, s.len});
      if (any_device) regions->push_back(device);
    }
  }
  return true;
}

bool TargetStream::StagedCopy(bool to_user, const std::vector<iovec> &iov, const std::vector<const Region *> &regions,
                              uint8_t *staging, std::string *why) {
  for (size_t i = 0; i < iov.size(); ++i) {
    const iovec &v = iov[i];
    const Region *r = regions[i];
    bool ok = true;
    if (r == nullptr) {
      std::memcpy(to_user ? v.iov_base : staging, to_user ? staging : v.iov_base, v.iov_len);
    } else if (to_user) {
      ok = r->memory->CopyFromHost(r->placement, v.iov_base, staging, v.iov_len, why);
    } else {
      ok = r->memory->CopyToHost(r->placement, staging, v.iov_base, v.iov_len, why);
    }
    if (!ok) return false;
    staging += v.iov_len;
  }
  return true;
}

}  // namespace hixl::tcp
