#include "transport/tcp/tcp_link.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "auth/authenticator.h"
#include "common/fork_fds.h"
#include "common/log.h"
#include "transport/tcp/frame_planner.h"
#include "transport/tcp/socket.h"
#include "wire/frame.h"

namespace hixl::tcp {
namespace {

uint64_t RandomNonce() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// The parts of the handshake on a fresh socket: HELLO out, (with a key:
// AUTH_CHALLENGE in, AUTH out), HELLO_ACK in. Apart, so that the streams of
// a link shake hands side by side.
Status SendFrame(int fd, wire::MsgType type, const std::vector<uint8_t> &body, Deadline deadline, std::string *why,
                 const std::atomic<bool> *cancel) {
  wire::FrameHeader h;
  h.type = type;
  h.req_id = 0;
  h.body_len = static_cast<uint32_t>(body.size());
  std::vector<uint8_t> frame(wire::kHeaderSize);
  wire::EncodeHeader(h, frame.data());
  frame.insert(frame.end(), body.begin(), body.end());
  return SendAll(fd, frame.data(), frame.size(), deadline, why, cancel);
}

// One handshake frame (no payload), its header checked.
Status RecvHandshakeFrame(int fd, Deadline deadline, wire::FrameHeader *reply, std::vector<uint8_t> *body,
                          std::string *why, const std::atomic<bool> *cancel) {
  uint8_t raw[wire::kHeaderSize];
  Status s = RecvAll(fd, raw, sizeof(raw), deadline, why, cancel);
  if (s != SUCCESS) return s;
  wire::HeaderError err = wire::DecodeHeader(raw, reply);
  if (err == wire::HeaderError::kBadVersion) {
    *why = "protocol version mismatch: peer speaks version " + std::to_string(reply->version) + ", we speak " +
           std::to_string(wire::kVersion);
    return FAILED;
  }
  const bool known = reply->type == wire::MsgType::kHelloAck || reply->type == wire::MsgType::kAuthChallenge;
  if (err != wire::HeaderError::kOk || !known || reply->payload_len != 0) {
    *why = std::string("not a HIXL handshake reply (") + wire::HeaderErrorName(err) + ")";
    return FAILED;
  }
  body->resize(reply->body_len);
  return RecvAll(fd, body->data(), body->size(), deadline, why, cancel);
}

Status RecvHelloAck(int fd, Deadline deadline, wire::HelloAck *ack, std::string *why,
                    const std::atomic<bool> *cancel) {
  wire::FrameHeader reply;
  std::vector<uint8_t> body;
  Status s = RecvHandshakeFrame(fd, deadline, &reply, &body, why, cancel);
  if (s != SUCCESS) return s;
  if (reply.type == wire::MsgType::kAuthChallenge) {
    *why = "peer requires authentication (it challenged us; set auth.key_file or HIXL_AUTH_KEY_FILE)";
    return FAILED;
  }
  if (!wire::DecodeHelloAck(body.data(), body.size(), ack)) {
    *why = "malformed handshake reply";
    return FAILED;
  }
  if (reply.status != SUCCESS) {
    *why = "peer refused the handshake: " + ack->reason;
    return FAILED;
  }
  return SUCCESS;
}

// With a key, between HELLO and HELLO_ACK: the target's AUTH_CHALLENGE must
// prove it holds the key (mutual authentication) before we prove we do.
Status AnswerChallenge(int fd, const auth::Authenticator &key, const wire::Hello &hello, Deadline deadline,
                       std::string *why, const std::atomic<bool> *cancel) {
  wire::FrameHeader reply;
  std::vector<uint8_t> body;
  Status s = RecvHandshakeFrame(fd, deadline, &reply, &body, why, cancel);
  if (s != SUCCESS) return s;
  if (reply.type == wire::MsgType::kHelloAck) {
    wire::HelloAck ack;
    if (reply.status != SUCCESS && wire::DecodeHelloAck(body.data(), body.size(), &ack)) {
      *why = "peer refused the handshake: " + ack.reason;
    } else {
      *why = "peer did not authenticate itself (it has no auth key, or runs an older hixl); we require it";
    }
    return FAILED;
  }
  wire::AuthChallenge challenge;
  if (!wire::DecodeAuthChallenge(body.data(), body.size(), &challenge)) {
    *why = "malformed AUTH_CHALLENGE";
    return FAILED;
  }
  if (!key.Check(auth::Role::kTarget, hello.auth_nonce, challenge.nonce_t, hello.initiator, hello.target,
                 challenge.mac_t)) {
    *why = "peer failed authentication: its proof does not match our key";
    return FAILED;
  }
  const auth::Mac mac_i =
      key.Prove(auth::Role::kInitiator, hello.auth_nonce, challenge.nonce_t, hello.initiator, hello.target);
  body.clear();
  wire::EncodeAuth(mac_i, &body);
  return SendFrame(fd, wire::MsgType::kAuth, body, deadline, why, cancel);
}

}  // namespace

Status TcpLink::Open(const LinkParams &params, const std::vector<std::unique_ptr<IoWorker>> &workers,
                     Deadline deadline, std::unique_ptr<TcpLink> *out, wire::HelloAck *ack, std::string *why) {
  std::unique_ptr<TcpLink> link(new TcpLink());
  link->remote_name_ = params.remote.ToString();
  link->nonce_ = params.link_nonce != 0 ? params.link_nonce : RandomNonce();
  std::vector<int> fds;
  auto close_all = [&fds] {
    for (int fd : fds) CloseKeptFd(fd);
  };
  wire::Hello hello;
  hello.initiator = params.local_name;
  hello.target = link->remote_name_;
  hello.link_nonce = link->nonce_;
  hello.host = params.host;
  hello.heartbeat_ms = params.heartbeat_ms;
  hello.stream_count = params.stream_total;
  // Every stream dials and sends its HELLO, then every answer is read: the
  // target answers them side by side (one round trip, not one per stream).
  Status s = SUCCESS;
  size_t at = 0;  // the stream a failure is about
  std::vector<wire::Hello> hellos;  // each stream's, for its proofs
  for (; at < params.count; ++at) {
    int fd = -1;
    if ((s = DialTcp(params.remote, deadline, &fd, why, params.cancel)) != SUCCESS) break;
    fds.push_back(fd);
    hello.stream_index = static_cast<uint16_t>(params.first_index + at);
    hello.offers = at == 0 ? params.offers : wire::Sections();
    // A fresh nonce per stream: a recorded handshake does not prove again.
    hello.has_auth = params.auth != nullptr;
    if (hello.has_auth && !params.auth->NewNonce(&hello.auth_nonce)) {
      *why = "no random nonce for authentication";
      s = FAILED;
      break;
    }
    std::vector<uint8_t> body;
    wire::EncodeHello(hello, &body);
    if ((s = SendFrame(fd, wire::MsgType::kHello, body, deadline, why, params.cancel)) != SUCCESS) break;
    hellos.push_back(hello);
  }
  for (at = s == SUCCESS ? 0 : at; s == SUCCESS && params.auth != nullptr && at < fds.size(); ++at) {
    if ((s = AnswerChallenge(fds[at], *params.auth, hellos[at], deadline, why, params.cancel)) != SUCCESS) break;
  }
  for (at = s == SUCCESS ? 0 : at; s == SUCCESS && at < fds.size(); ++at) {
    wire::HelloAck a;
    if ((s = RecvHelloAck(fds[at], deadline, &a, why, params.cancel)) != SUCCESS) break;
    if (at == 0) {
      *ack = std::move(a);
      if (params.after_hello && !params.after_hello(*ack, fds[0])) {
        *why = "given up after the handshake";
        s = FAILED;
        break;
      }
    }
  }
  if (s != SUCCESS) {
    *why = "stream " + std::to_string(params.first_index + at) + ": " + *why;
    close_all();
    return s;
  }
  std::weak_ptr<WriteFence> fence = link->fence_;
  auto lifted = [fence] {
    if (auto f = fence.lock()) f->Lifted();
  };
  std::vector<std::weak_ptr<InitiatorStream>> weak;
  for (uint16_t i = 0; i < params.count; ++i) {
    IoWorker *w = PickWorker(workers);
    const unsigned index = params.first_index + i;
    auto s = std::make_shared<InitiatorStream>(
        fds[i], w, "link to " + link->remote_name_ + (index == 0 ? " control" : " stream " + std::to_string(index)),
        i == 0 ? params.on_push : nullptr, params.before_close, lifted);
    w->Add(s, EPOLLIN);
    link->caches_.push_back(&s->buffers());
    weak.push_back(s);
    link->streams_.push_back(std::move(s));
  }
  link->fence_->SetStreams(std::move(weak));
  *out = std::move(link);
  return SUCCESS;
}

TcpLink::~TcpLink() { Close("link released"); }

void TcpLink::SubmitOrFail(InitiatorStream *s, std::vector<std::unique_ptr<Request>> *reqs, bool may_wait) {
  if (reqs->empty() || s->Submit(reqs, may_wait)) return;
  HIXL_LOGE("%s is closed; %zu frame(s) fail", s->name().c_str(), reqs->size());
  for (auto &r : *reqs) r->done->PartDone(FAILED);
  reqs->clear();
}

void TcpLink::Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
                     Deadline deadline, bool caller_waits) {
  std::vector<std::vector<std::unique_ptr<Request>>> per_stream;
  bool fenced = !fence_->empty();  // atomics first: the fence's lock only when it may matter
  for (const auto &s : streams_) fenced = fenced || s->abandoned_writes() > 0;
  const size_t route = fenced ? fence_->Route() : WriteFence::kAnyStream;
  if (route == WriteFence::kAnyStream) {
    per_stream = PlanFrames(is_write, pieces, n, rotate_.fetch_add(1, std::memory_order_relaxed), caches_, done);
    for (const auto &frames : per_stream) done->AddParts(frames.size());
  } else {
    // Behind the frames of timed-out WRITEs (see WriteFence), or parked.
    auto planned = PlanFrames(is_write, pieces, n, 0, {caches_[route]}, done);
    done->AddParts(planned[0].size());
    const size_t to = fence_->Admit(&planned[0], route);
    if (to == WriteFence::kAnyStream) return;  // parked: the fence submits or fails them
    per_stream.resize(streams_.size());
    per_stream[to] = std::move(planned[0]);
  }
  size_t used = 0, last = 0;
  for (size_t i = 0; i < per_stream.size(); ++i) {
    if (!per_stream[i].empty()) {
      ++used;
      last = i;
    }
  }
  // A waiting caller with everything on one stream receives the replies
  // itself (see SubmitAndDrive); otherwise the workers do.
  if (caller_waits && used == 1) {
    InitiatorStream *s = streams_[last].get();
    if (!s->SubmitAndDrive(&per_stream[last], deadline)) SubmitOrFail(s, &per_stream[last]);
    return;
  }
  // Nobody waits: requests may join others on the wire (see kHoldBytes).
  for (size_t i = 0; i < streams_.size(); ++i) SubmitOrFail(streams_[i].get(), &per_stream[i], !caller_waits);
}

void TcpLink::Progress() {
  for (auto &s : streams_) s->Progress();
}

void TcpLink::SubmitControl(std::unique_ptr<Request> req) {
  req->done->AddParts(1);
  std::vector<std::unique_ptr<Request>> one;
  one.push_back(std::move(req));
  SubmitOrFail(streams_[0].get(), &one);
}

void TcpLink::Cancel(const Completion *done) {
  fence_->Drop(done);
  for (auto &s : streams_) s->Cancel(done);
}

void TcpLink::Close(const char *why) {
  fence_->Drop(nullptr);
  for (auto &s : streams_) s->Close(why);
}

bool TcpLink::idle() const {
  if (!fence_->empty()) return false;
  for (const auto &s : streams_) {
    if (s->calls_queued() != 0) return false;  // a heartbeat PING awaiting its PONG uses no link
  }
  return true;
}

bool TcpLink::CheckAlive(int64_t interval_ms) {
  const int64_t now = SteadyMillis();
  for (const auto &s : streams_) {
    if (s->closed()) return false;
    int64_t quiet = now - s->last_rx_ms();
    if (s->queued() > 0) {
      // Busy: the peer is alive while it sends to us or takes what we send.
      quiet = now - std::max(s->last_rx_ms(), s->last_tx_ms());
      if (quiet > 2 * interval_ms) {
        HIXL_LOGE("%s: nothing received or sent for %lld ms with %zu request(s) outstanding; the peer is gone",
                  s->name().c_str(), static_cast<long long>(quiet), s->queued());
        return false;
      }
    } else if (2 * quiet >= interval_ms) {
      // Half an interval: with the checks' own period (up to a quarter of
      // the interval, at least 100 ms) a ping still reaches the target well
      // inside its three intervals at the shortest interval (100 ms), even
      // when this thread runs late on a loaded host.
      std::vector<std::unique_ptr<Request>> ping;
      ping.push_back(MakeRequest(wire::MsgType::kPing, {}, std::make_shared<Completion>()));
      ping.back()->done->AddParts(1);
      s->Submit(&ping);
    }
  }
  return true;
}

bool TcpLink::broken() const {
  for (const auto &s : streams_) {
    if (s->closed()) return true;
  }
  return false;
}

}  // namespace hixl::tcp
