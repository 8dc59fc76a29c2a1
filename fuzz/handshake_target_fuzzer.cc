// handshake_target_fuzzer.cc: the target's side of a link (TargetStream in
// src/transport/tcp, the engine's Serving in src/engine) on what a would-be
// initiator sends on a fresh stream: HELLO, then requests (region pages,
// notifies, USING, READ, WRITE, PING) and REVOKE_ACKs, or anything else.
//
// In process, no network: the stream's socket is one end of a socketpair,
// served by a real IoWorker thread as the engine serves it; the fuzzer
// writes the input into the other end and reads what the target sends.
// The target is an engine at 127.0.0.1:26000 (the address a HELLO must
// dial) with the tcp and shm transports and three registered regions at a
// fixed address (so that seeds can name them): 4 KiB, 64 KiB, and 4 KiB
// this process may only read, each between guard pages.
//
// Input: 4 bytes that seed the schedule, then the stream. The stream goes in
// pieces of random sizes; after some pieces the engine starts a revocation
// of one of its regions (REVOKE to the link's control stream, ids 1, 2, ...
// in each run), as DeregisterMem does. The seed's top bit makes the run an
// authenticated one: the engine has a key (fuzz_auth.h), and the first AUTH
// frame of the stream whose proof is 32 zero bytes gets the right proof,
// computed from the stream's first frame (its HELLO) and the target's
// AUTH_CHALLENGE, before its body goes out. Checked besides "no crash, no
// sanitizer report":
// - bounded: once the input is sent and our end shut, the target closes the
//   stream (or shuts its side) within 5 s;
// - nothing of the target's memory goes out before a valid HELLO: until a
//   HELLO_ACK with status 0, the target sends only a refusing HELLO_ACK
//   (no region, no payload), and nothing after that;
// - with a key, nothing before the peer's proof: a HELLO_ACK with status 0
//   only after an AUTH_CHALLENGE and the right proof went out; the
//   challenge's own proof is the target's right one; without a key, no
//   AUTH_CHALLENGE;
// - what it sends is frames it may send: replies and REVOKEs, whole; its
//   HELLO_ACK's table is the registered regions; a REVOKE only after the
//   handshake, with an id of a revocation started;
// - the guard pages around the regions, and the read-only region, are
//   never written.
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "common/address.h"
#include "common/io_worker.h"
#include "engine/notify_inbox.h"
#include "engine/revocation.h"
#include "engine/serving.h"
#include "fuzz_auth.h"
#include "fuzz_check.h"
#include "hixl/hixl_log.h"
#include "memory/registry.h"
#include "target_schedule.h"
#include "transport/registry.h"
#include "transport/tcp/target_stream.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace {

namespace w = hixl::wire;

constexpr uintptr_t kBase = 0x10000000;  // where the regions are (seeds name these addresses)
constexpr size_t kPage = 4096;
constexpr uint8_t kGuard = 0xee;
// [guard][A: 4 KiB][guard][B: 64 KiB][guard][C: 4 KiB, read-only][guard]
struct Layout {
  uintptr_t addr;
  size_t len;
  bool writable;
};
constexpr Layout kRegions[] = {
    {kBase + kPage, kPage, true},
    {kBase + 3 * kPage, 16 * kPage, true},
    {kBase + 20 * kPage, kPage, false},
};
constexpr size_t kSpan = 22 * kPage;
constexpr char kAddress[] = "127.0.0.1:26000";

uint8_t RegionByte(size_t i) { return static_cast<uint8_t>(0x21 + i % 90); }

// What every run shares: the engine's parts that outlive a link.
struct Engine {
  uint8_t *mem = nullptr;
  std::vector<uint8_t> pristine;  // what mem holds at the start of a run
  hixl::EngineAddress local;
  std::string name = kAddress;
  w::HostIdentity host{"fuzz-boot-id", 4026531836u, 0};
  hixl::Registry registry{64};
  hixl::NotifyInbox inbox;
  std::vector<std::unique_ptr<hixl::IoWorker>> workers;
  std::vector<std::unique_ptr<hixl::Transport>> transports;
  std::atomic<bool> stopping{false};

  Engine() {
    if (std::getenv("HIXL_FUZZ_LOG") == nullptr) hixl::SetLogSink([](hixl::LogLevel, const char *, void *) {}, nullptr);
    void *p = mmap(reinterpret_cast<void *>(kBase), kSpan, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    FUZZ_CHECK(p == reinterpret_cast<void *>(kBase));
    mem = static_cast<uint8_t *>(p);
    Refill();
    std::memcpy(mem, pristine.data(), kSpan);
    FUZZ_CHECK(mprotect(reinterpret_cast<void *>(kRegions[2].addr), kRegions[2].len, PROT_READ) == 0);
    std::string why;
    FUZZ_CHECK(hixl::ParseEngineAddress(kAddress, &local, &why));
    workers.push_back(std::make_unique<hixl::IoWorker>("fuzz-target"));
    FUZZ_CHECK(workers[0]->Start());
    hixl::TransportEnv env;
    env.local_name = kAddress;
    env.host = host;
    env.io_workers = &workers;
    env.cancel = &stopping;
    for (const char *t : {"shm", "tcp"}) {
      hixl::TransportInfo info;
      FUZZ_CHECK(hixl::Transports().Find(t, &info));
      std::unique_ptr<hixl::Transport> made;
      FUZZ_CHECK(info.make(env, &made, &why) == hixl::SUCCESS);
      transports.push_back(std::move(made));
    }
    for (const Layout &r : kRegions) {
      hixl::MemHandle h = nullptr;
      FUZZ_CHECK(registry.Register(r.addr, r.len, &h) == hixl::SUCCESS);
    }
  }

  // The writable regions as at the start (a WRITE of the last run changed
  // them). memcpy and memcmp, not loops: this code is instrumented too, and
  // a loop over 90 KiB would cost more than the run.
  void Refill() {
    if (pristine.empty()) {
      pristine.resize(kSpan);
      for (size_t i = 0; i < kSpan; ++i) pristine[i] = kGuard;
      for (const Layout &r : kRegions) {
        for (size_t i = 0; i < r.len; ++i) pristine[r.addr - kBase + i] = RegionByte(i);
      }
    }
    for (const Layout &r : kRegions) {
      if (r.writable) std::memcpy(mem + (r.addr - kBase), pristine.data() + (r.addr - kBase), r.len);
    }
  }

  // Nothing outside the regions was written, nor the read-only one.
  bool Intact() const {
    size_t at = 0;
    for (const Layout &r : kRegions) {
      const size_t start = r.addr - kBase;
      if (std::memcmp(mem + at, pristine.data() + at, start - at) != 0) return false;
      if (!r.writable && std::memcmp(mem + start, pristine.data() + start, r.len) != 0) return false;
      at = start + r.len;
    }
    return std::memcmp(mem + at, pristine.data() + at, kSpan - at) == 0;
  }

  // Runs on the worker after everything posted before: the stream's events
  // that were ready by now are handled, its posted pushes ran.
  void Barrier() {
    std::promise<void> done;
    auto f = done.get_future();
    FUZZ_CHECK(workers[0]->Post([&done] { done.set_value(); }));
    f.wait();
  }
};

Engine &TheEngine() {
  static Engine *e = new Engine();  // never destroyed: the worker runs until exit
  return *e;
}

// What the target sent, checked frame by frame.
class OutputCheck {
 public:
  // `hello`: the stream's first frame decoded, when it is a HELLO (else
  // one without an auth section); `proof_sent`: whether the right AUTH
  // went out.
  OutputCheck(const std::vector<uint64_t> *revocations, bool keyed, const w::Hello *hello, const bool *proof_sent)
      : revocations_(revocations), keyed_(keyed), hello_(hello), proof_sent_(proof_sent) {}

  // The AUTH_CHALLENGE's nonce, once one came.
  const w::AuthBytes *challenge() const { return challenged_ ? &nonce_t_ : nullptr; }

  void Add(const uint8_t *p, size_t n) {
    buf_.insert(buf_.end(), p, p + n);
    for (;;) {
      if (buf_.size() - at_ < w::kHeaderSize) return;
      w::FrameHeader h;
      FUZZ_CHECK(w::DecodeHeader(buf_.data() + at_, &h) == w::HeaderError::kOk);
      const size_t whole = w::kHeaderSize + h.body_len + h.payload_len;
      if (buf_.size() - at_ < whole) return;
      OnFrame(h, buf_.data() + at_ + w::kHeaderSize);
      at_ += whole;
    }
  }

  // At the end of the stream: nothing cut off.
  void End() const { FUZZ_CHECK(at_ == buf_.size()); }

 private:
  void OnFrame(const w::FrameHeader &h, const uint8_t *body) {
    FUZZ_CHECK(!refused_);  // nothing after a refusal
    const auto type = static_cast<uint8_t>(h.type);
    if (h.type == w::MsgType::kRevoke) {
      FUZZ_CHECK(accepted_ && h.payload_len == 0);
      FUZZ_CHECK(std::find(revocations_->begin(), revocations_->end(), h.req_id) != revocations_->end());
      w::RegionInfo r;
      FUZZ_CHECK(w::DecodeRevoke(body, h.body_len, &r));
      return;
    }
    if (h.type == w::MsgType::kAuthChallenge) {
      // Only with a key, once, as the answer to the HELLO, with its proof.
      FUZZ_CHECK(keyed_ && !challenged_ && !accepted_ && h.status == hixl::SUCCESS && h.payload_len == 0);
      w::AuthChallenge c;
      FUZZ_CHECK(w::DecodeAuthChallenge(body, h.body_len, &c));
      if (hello_ != nullptr && hello_->has_auth) {
        const auto &key = hixl_fuzz::FuzzKey();
        FUZZ_CHECK(key.Same(c.mac_t, key.Prove(hixl::auth::Role::kTarget, hello_->auth_nonce, c.nonce_t,
                                               hello_->initiator, hello_->target)));
      }
      challenged_ = true;
      nonce_t_ = c.nonce_t;
      return;
    }
    FUZZ_CHECK(type % 2 == 0);  // a reply
    if (!accepted_) {
      // Before a valid HELLO: a HELLO_ACK, and only a refusing one gives no
      // region and is the last frame.
      FUZZ_CHECK(h.type == w::MsgType::kHelloAck && h.payload_len == 0);
      w::HelloAck ack;
      FUZZ_CHECK(w::DecodeHelloAck(body, h.body_len, &ack));
      if (h.status != hixl::SUCCESS) {
        FUZZ_CHECK(ack.regions.total == 0 && ack.regions.entries.empty() && !ack.reason.empty());
        refused_ = true;
        return;
      }
      FUZZ_CHECK(!keyed_ || (challenged_ && *proof_sent_));  // the peer proved it holds the key
      FUZZ_CHECK(ack.target == kAddress);
      FUZZ_CHECK(ack.regions.total == 3 && ack.regions.count == 3 && ack.regions.entries.size() == 3);
      for (size_t i = 0; i < 3; ++i) {
        FUZZ_CHECK(ack.regions.entries[i].range.addr == kRegions[i].addr &&
                   ack.regions.entries[i].range.len == kRegions[i].len);
      }
      accepted_ = true;
      return;
    }
    FUZZ_CHECK(h.type != w::MsgType::kHelloAck);  // one handshake per stream
    FUZZ_CHECK(h.payload_len == 0 || (h.type == w::MsgType::kReadResp && h.status == hixl::SUCCESS));
  }

  const std::vector<uint64_t> *revocations_;
  const bool keyed_;
  const w::Hello *hello_;
  const bool *proof_sent_;
  w::AuthBytes nonce_t_{};
  bool challenged_ = false;  // an AUTH_CHALLENGE went out
  std::vector<uint8_t> buf_;
  size_t at_ = 0;
  bool accepted_ = false;  // a HELLO_ACK with status 0 went out
  bool refused_ = false;   // a refusing one went out
};

class Run {
 public:
  Run(Engine &e, const uint8_t *s, size_t size, uint32_t seed)
      : e_(e), in_(s, s + size), s_(in_.data()), size_(size), schedule_(seed), keyed_((seed >> 31) != 0),
        serving_(e.local, e.name, e.host, e.registry, revocation_, e.inbox, e.transports, e.stopping,
                 keyed_ ? &hixl_fuzz::FuzzKey() : nullptr),
        check_(&revocations_, keyed_, &hello_, &proof_sent_) {
    FindFrames();
  }

  void Go() {
    int sp[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) == 0);
    fd_ = sp[0];
    {
      auto stream = std::make_shared<hixl::tcp::TargetStream>(sp[1], e_.workers[0].get(), &serving_,
                                                             "127.0.0.1:40000");
      e_.workers[0]->Add(stream, EPOLLIN);
    }  // the worker owns it from now on, until it closes
    // Every round sends a piece; then the target's turn.
    for (size_t round = 0; sent_ < size_ && round < size_ + 1; ++round) {
      Feed();
      size_t which = 0;
      if (schedule_.Revoke(&which)) {
        revocations_.push_back(revocation_.Start({kRegions[which].addr, kRegions[which].len}, /*tell_tcp=*/true));
      }
      e_.Barrier();
      if (!Drain()) break;
    }
    shutdown(fd_, SHUT_WR);
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!eof_) {
      FUZZ_CHECK(std::chrono::steady_clock::now() < limit);  // the target must end the stream
      e_.Barrier();
      Drain();
      if (!eof_) usleep(100);
    }
    check_.End();
    close(fd_);
    e_.Barrier();  // the stream's close has run (and whatever it posted)
    for (uint64_t id : revocations_) revocation_.Forget(id);
    (void)e_.inbox.Drain();
    FUZZ_CHECK(e_.Intact());
    e_.Refill();
  }

 private:
  // The stream's first frame, if a whole HELLO (hello_, for the checks and
  // the proof), and where the proof of its first AUTH with a placeholder is.
  void FindFrames() {
    bool have_hello = false;
    for (size_t at = 0; size_ - at >= w::kHeaderSize;) {
      w::FrameHeader h;
      if (w::DecodeHeader(s_ + at, &h) != w::HeaderError::kOk) break;
      const uint64_t whole = w::kHeaderSize + uint64_t{h.body_len} + h.payload_len;
      if (whole > size_ - at) break;
      const uint8_t *body = s_ + at + w::kHeaderSize;
      if (at == 0) have_hello = h.type == w::MsgType::kHello && w::DecodeHello(body, h.body_len, &hello_);
      if (keyed_ && h.type == w::MsgType::kAuth && h.body_len >= w::kAuthBytes && hixl_fuzz::IsPlaceholder(body)) {
        proof_at_ = at + w::kHeaderSize;
        break;
      }
      at += static_cast<size_t>(whole);
    }
    if (!have_hello) hello_ = w::Hello();  // (no auth section: nothing to prove with)
  }

  // Before the placeholder goes out: the right proof in its place, if the
  // target has challenged us by then (it answers a whole HELLO at once).
  void FillProof() {
    for (int i = 0; i < 100 && check_.challenge() == nullptr && !eof_; ++i) {
      e_.Barrier();
      Drain();
      if (check_.challenge() == nullptr) usleep(100);
    }
    const w::AuthBytes *nonce_t = check_.challenge();
    if (nonce_t != nullptr && hello_.has_auth) {
      const w::AuthBytes mac = hixl_fuzz::FuzzKey().Prove(hixl::auth::Role::kInitiator, hello_.auth_nonce, *nonce_t,
                                                          hello_.initiator, hello_.target);
      std::memcpy(in_.data() + proof_at_, mac.data(), mac.size());
      proof_sent_ = true;
    }
    proof_at_ = kNone;
  }

  void Feed() {
    size_t n = std::min(schedule_.Piece(size_), size_ - sent_);
    if (proof_at_ != kNone) {
      if (sent_ == proof_at_) FillProof();
      else n = std::min(n, proof_at_ - sent_);
    }
    ssize_t got = send(fd_, s_ + sent_, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (got > 0) sent_ += static_cast<size_t>(got);
  }

  // Reads what the target sent; false once its end closed.
  bool Drain() {
    uint8_t buf[65536];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        check_.Add(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) eof_ = true;
      return !eof_;
    }
  }

  static constexpr size_t kNone = SIZE_MAX;

  Engine &e_;
  std::vector<uint8_t> in_;  // the stream (a copy: the proof goes into it)
  const uint8_t *s_;
  size_t size_;
  hixl_fuzz::TargetSchedule schedule_;
  const bool keyed_;       // the engine has a key
  w::Hello hello_;         // the stream's first frame, if a HELLO
  size_t proof_at_ = kNone;  // where the placeholder proof is, until filled in
  bool proof_sent_ = false;  // the right proof went (or goes) out
  hixl::Revocation revocation_;
  hixl::Serving serving_;
  std::vector<uint64_t> revocations_;
  OutputCheck check_;
  int fd_ = -1;
  size_t sent_ = 0;
  bool eof_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  uint32_t seed;
  std::memcpy(&seed, data, 4);
  Run(TheEngine(), data + 4, size - 4, seed).Go();
  return 0;
}
