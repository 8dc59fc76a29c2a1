// handshake_initiator_fuzzer.cc: the initiator's side of a link's control
// connection (src/control/control_link.*, over transport/tcp's handshake and
// InitiatorStream) against a hostile target.
//
// The target is a thread of this process listening on 127.0.0.1 (the
// initiator dials a real socket: ControlLink has no other way in). Input:
// one byte whose low bit gives the initiator a key (fuzz_auth.h), then the
// frames the target sends, one after another, raw (header fields as the
// input has them, a frame cut short at the end of the input). If the first
// is an AUTH_CHALLENGE whose proof is 32 zero bytes, the target's right
// proof goes in its place (a fuzzer cannot forge one; other bytes go out
// as they are). It reads the HELLO
// (which must be a valid one, naming us), sends the first frame as the
// answer, then each next frame as the reply to the next request it reads
// (a req_id of 0 is replaced by the request's, so that seeds can answer
// requests whose ids they cannot know); a REVOKE goes out at its turn
// without waiting. After the last frame it shuts its side and reads until
// the initiator closes. The initiator meanwhile runs ControlLink::Open,
// then, if it succeeded, a NOTIFY, FetchRegions and USING, then closes.
//
// Checked besides "no crash, no sanitizer report":
// - every call ends within its deadline (+0.5 s), with SUCCESS, FAILED or
//   TIMEOUT (a NOTIFY: a status the wire may carry);
// - the region table the initiator keeps is consistent with what was sent:
//   each region in it is an entry of a page the target sent (range, kind,
//   sections), and one whose REVOKE the initiator acknowledged is not in it
//   unless a page sent after that REVOKE holds it again; every
//   REVOKE_ACK echoes a REVOKE sent, and at most as often;
// - what the initiator sends is valid frames: a HELLO naming us and the
//   address it dialed, then requests;
// - authentication is mutual: with a key, Open succeeds only after the
//   target's right proof, and the initiator's AUTH (sent only then, once)
//   is its right proof; its HELLO has an auth section only with a key; an
//   initiator without a key never succeeds against a target that
//   challenges it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/address.h"
#include "common/completion.h"
#include "common/io_worker.h"
#include "control/control_link.h"
#include "fuzz_auth.h"
#include "fuzz_check.h"
#include "hixl/hixl_log.h"
#include "memory/remote_regions.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace {

namespace w = hixl::wire;
using Clock = std::chrono::steady_clock;

constexpr char kLocalName[] = "127.0.0.1:40000";
constexpr int64_t kDeadlineMs = 2000;
constexpr auto kSlack = std::chrono::milliseconds(500);

uint64_t Le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

bool SameSections(const w::Sections &a, const w::Sections &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].bytes != b[i].bytes) return false;
  }
  return true;
}

// What the target sent and received in one run, in stream order (`seq`).
struct Record {
  struct Sent {
    uint64_t seq;
    w::RegionEntry entry;
  };
  std::vector<Sent> entries;  // of every page sent that decodes (HELLO_ACK or REGIONS_RESP)
  struct Revoke {
    uint64_t seq;
    uint64_t id;
    w::RegionInfo region;
  };
  std::vector<Revoke> revokes;  // whole, decodable REVOKEs sent
  std::vector<uint64_t> acks;   // REVOKE_ACK ids received
  uint64_t seq = 0;
  bool hello_ok = false;
  // Authentication: the initiator's HELLO; the first frame's type (0: none
  // whole); the nonce of the AUTH_CHALLENGE sent, and whether its proof was
  // the right one; whether the initiator's AUTH came.
  bool keyed = false;
  w::Hello hello;
  uint8_t first_type = 0;
  w::AuthBytes nonce_t{};
  bool proved = false;
  bool auth_sent = false;
};

class HostileTarget {
 public:
  HostileTarget() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(listen_fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    FUZZ_CHECK(bind(listen_fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0);
    socklen_t len = sizeof(a);
    FUZZ_CHECK(getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    FUZZ_CHECK(listen(listen_fd_, 16) == 0);
    thread_ = std::thread([this] { Loop(); });
    thread_.detach();  // runs until the process exits
  }

  uint16_t port() const { return port_; }

  void Arm(const uint8_t *script, size_t size, bool keyed) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.assign(script, script + size);
    keyed_ = keyed;
    rec_ = Record();
    armed_ = true;
    done_ = false;
  }

  // Waits until the run's connection is over; its record.
  Record Finish() {
    std::unique_lock<std::mutex> lock(mu_);
    FUZZ_CHECK(cv_.wait_for(lock, std::chrono::seconds(5), [this] { return done_; }));
    armed_ = false;
    return std::move(rec_);
  }

 private:
  void Loop() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      timeval tv{5, 0};  // the initiator always sends or closes: waiting longer is a hang
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      std::vector<uint8_t> script;
      Record rec;
      {
        std::lock_guard<std::mutex> lock(mu_);
        FUZZ_CHECK(armed_ && !done_);  // one connection per run
        script = script_;
        rec.keyed = keyed_;
      }
      Serve(fd, script, &rec);
      close(fd);
      std::lock_guard<std::mutex> lock(mu_);
      rec_ = std::move(rec);
      done_ = true;
      cv_.notify_all();
    }
  }

  static bool RecvAll(int fd, uint8_t *p, size_t n) {
    while (n > 0) {
      ssize_t got = recv(fd, p, n, 0);
      if (got == 0) return false;
      if (got < 0) {
        FUZZ_CHECK(errno == EINTR || errno == ECONNRESET);  // EAGAIN: the 5 s limit, a hang
        if (errno == ECONNRESET) return false;
        continue;
      }
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }

  // One frame from the initiator: a valid one, or the end of the stream.
  static bool ReadFrame(int fd, w::FrameHeader *h, std::vector<uint8_t> *body) {
    uint8_t raw[w::kHeaderSize];
    if (!RecvAll(fd, raw, sizeof(raw))) return false;
    FUZZ_CHECK(w::DecodeHeader(raw, h) == w::HeaderError::kOk);
    FUZZ_CHECK(w::IsRequest(h->type) && h->payload_len == 0);
    body->resize(h->body_len);
    return RecvAll(fd, body->data(), body->size());
  }

  static bool SendAll(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
      ssize_t got = send(fd, p, n, MSG_NOSIGNAL);
      if (got < 0) {
        if (errno == EINTR) continue;
        FUZZ_CHECK(errno == EPIPE || errno == ECONNRESET);
        return false;
      }
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }

  // Reads requests until one that expects a reply (its id in *id); false
  // at the end of the stream.
  static bool NextRequest(int fd, Record *rec, uint64_t *id) {
    w::FrameHeader h;
    std::vector<uint8_t> body;
    for (;;) {
      if (!ReadFrame(fd, &h, &body)) return false;
      FUZZ_CHECK(h.type != w::MsgType::kHello);
      if (h.type == w::MsgType::kAuth) {
        // Only after the target proved itself, once, with the right proof.
        FUZZ_CHECK(rec->keyed && rec->proved && !rec->auth_sent);
        w::AuthBytes mac_i;
        FUZZ_CHECK(w::DecodeAuth(body.data(), body.size(), &mac_i));
        const auto &key = hixl_fuzz::FuzzKey();
        FUZZ_CHECK(key.Same(mac_i, key.Prove(hixl::auth::Role::kInitiator, rec->hello.auth_nonce, rec->nonce_t,
                                             rec->hello.initiator, rec->hello.target)));
        rec->auth_sent = true;
      }
      if (h.type == w::MsgType::kRevokeAck) {
        rec->acks.push_back(h.req_id);
        ++rec->seq;
        continue;
      }
      if (!w::ExpectsReply(h.type)) continue;  // USING, BYE
      *id = h.req_id;
      return true;
    }
  }

  // Notes what a frame the target is about to send tells (entries, REVOKEs).
  static void Note(const uint8_t *f, size_t n, Record *rec) {
    ++rec->seq;
    if (n < w::kHeaderSize) return;
    const uint64_t body_len = Le(f + 12, 4), payload_len = Le(f + 24, 8);
    if (n - w::kHeaderSize < body_len) return;
    const uint8_t *body = f + w::kHeaderSize;
    const uint8_t type = f[5];
    if (type == static_cast<uint8_t>(w::MsgType::kRevoke)) {
      // One the initiator takes (a whole, valid frame): only those count.
      w::FrameHeader h;
      w::RegionInfo r;
      if (w::DecodeHeader(f, &h) == w::HeaderError::kOk && payload_len == 0 && body_len >= 16 && body_len <= 64 &&
          w::DecodeRevoke(body, body_len, &r)) {
        rec->revokes.push_back({rec->seq, h.req_id, r});
      }
      return;
    }
    w::RegionPage page;
    if (type == static_cast<uint8_t>(w::MsgType::kHelloAck)) {
      w::HelloAck ack;
      if (!w::DecodeHelloAck(body, body_len, &ack)) return;
      page = std::move(ack.regions);
    } else if (type != static_cast<uint8_t>(w::MsgType::kRegionsResp) || !w::DecodeRegionPage(body, body_len, &page)) {
      return;
    }
    for (auto &e : page.entries) rec->entries.push_back({rec->seq, std::move(e)});
  }

  // The first frame, if a whole AUTH_CHALLENGE: its placeholder proof
  // replaced with the right one; what it challenges with, and whether its
  // proof is right, noted.
  static void Challenge(uint8_t *f, size_t n, Record *rec) {
    if (n < w::kHeaderSize) return;
    const uint64_t body_len = Le(f + 12, 4), payload_len = Le(f + 24, 8);
    if (n - w::kHeaderSize < body_len + payload_len) return;
    rec->first_type = f[5];
    uint8_t *body = f + w::kHeaderSize;
    w::AuthChallenge c;
    if (f[5] != static_cast<uint8_t>(w::MsgType::kAuthChallenge) || !rec->keyed ||
        !w::DecodeAuthChallenge(body, body_len, &c)) {
      return;
    }
    const auto &key = hixl_fuzz::FuzzKey();
    const w::AuthBytes mac_t =
        key.Prove(hixl::auth::Role::kTarget, rec->hello.auth_nonce, c.nonce_t, rec->hello.initiator, rec->hello.target);
    if (hixl_fuzz::IsPlaceholder(c.mac_t.data())) {
      std::memcpy(body + w::kAuthBytes, mac_t.data(), mac_t.size());
      c.mac_t = mac_t;
    }
    rec->nonce_t = c.nonce_t;
    rec->proved = key.Same(c.mac_t, mac_t);
  }

  void Serve(int fd, std::vector<uint8_t> &s, Record *rec) const {
    w::FrameHeader h;
    std::vector<uint8_t> body;
    if (!ReadFrame(fd, &h, &body)) return;
    w::Hello &hello = rec->hello;
    FUZZ_CHECK(h.type == w::MsgType::kHello && w::DecodeHello(body.data(), body.size(), &hello));
    FUZZ_CHECK(hello.initiator == kLocalName && hello.target == "127.0.0.1:" + std::to_string(port_));
    FUZZ_CHECK(hello.stream_index == 0 && hello.stream_count == 1);
    FUZZ_CHECK(hello.has_auth == rec->keyed);
    rec->hello_ok = true;
    size_t pos = 0;
    for (bool first = true; pos < s.size(); first = false) {
      uint8_t *f = s.data() + pos;
      size_t n = s.size() - pos;
      if (n >= w::kHeaderSize) {
        const uint64_t want = w::kHeaderSize + Le(f + 12, 4) + std::min<uint64_t>(Le(f + 24, 8), n);
        n = static_cast<size_t>(std::min<uint64_t>(want, n));
        uint64_t id = 0;
        if (f[5] != static_cast<uint8_t>(w::MsgType::kRevoke) && !first && !NextRequest(fd, rec, &id)) break;
        if (Le(f + 16, 8) == 0) std::memcpy(f + 16, &id, 8);  // little-endian host
        if (first) Challenge(f, n, rec);
      }
      Note(f, n, rec);
      if (!SendAll(fd, f, n)) break;
      pos += n;
    }
    shutdown(fd, SHUT_WR);
    uint64_t id;
    while (NextRequest(fd, rec, &id)) {
    }
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint8_t> script_;
  Record rec_;
  bool keyed_ = false;
  bool armed_ = false;
  bool done_ = false;
};

struct Initiator {
  std::vector<std::unique_ptr<hixl::IoWorker>> workers;
  HostileTarget target;

  Initiator() {
    if (std::getenv("HIXL_FUZZ_LOG") == nullptr) hixl::SetLogSink([](hixl::LogLevel, const char *, void *) {}, nullptr);
    workers.push_back(std::make_unique<hixl::IoWorker>("fuzz-initiator"));
    FUZZ_CHECK(workers[0]->Start());
  }

  // Returns once the worker has run everything posted before.
  void Barrier() {
    std::promise<void> done;
    auto f = done.get_future();
    FUZZ_CHECK(workers[0]->Post([&done] { done.set_value(); }));
    f.wait();
  }
};

Initiator &TheInitiator() {
  static Initiator *i = new Initiator();  // never destroyed: its threads run until exit
  return *i;
}

// Runs `call` and checks that it returned in time with one of `allowed`.
template <class Call>
hixl::Status Timed(Call &&call, std::initializer_list<hixl::Status> allowed) {
  const auto start = Clock::now();
  const hixl::Status s = call(hixl::Deadline::AfterMillis(kDeadlineMs, start));
  FUZZ_CHECK(Clock::now() - start <= std::chrono::milliseconds(kDeadlineMs) + kSlack);
  FUZZ_CHECK(std::find(allowed.begin(), allowed.end(), s) != allowed.end());
  return s;
}

void CheckTable(const hixl::RemoteRegions &regions, const Record &rec) {
  // Every REVOKE_ACK echoes a REVOKE sent, at most as often as it was sent.
  std::map<uint64_t, int> sent, acked;
  for (const auto &r : rec.revokes) ++sent[r.id];
  for (uint64_t id : rec.acks) FUZZ_CHECK(++acked[id] <= sent[id]);
  auto table = regions.Snapshot();
  for (const auto &kept : regions.Regions()) {  // (nothing replaces the table meanwhile: the same one)
    FUZZ_CHECK(table->Find(kept->range.addr, kept->range.len) != nullptr);
    FUZZ_CHECK(regions.Contains(kept->range.addr, kept->range.len));
    uint64_t last_sent = 0;  // the last page entry that holds it
    bool found = false;
    for (const auto &e : rec.entries) {
      if (e.entry.range.addr == kept->range.addr && e.entry.range.len == kept->range.len &&
          e.entry.kind == kept->kind && SameSections(e.entry.sections, kept->sections)) {
        found = true;
        last_sent = std::max(last_sent, e.seq);
      }
    }
    FUZZ_CHECK(found);
    // Acknowledged: forgotten, unless a page after the REVOKE holds it
    // again. The answers come in the order of the REVOKEs: the k-th REVOKE
    // with an id was answered if that id was answered k times.
    std::map<uint64_t, int> nth;
    for (const auto &r : rec.revokes) {
      const int k = ++nth[r.id];
      if (acked[r.id] < k || r.region.addr != kept->range.addr || r.region.len != kept->range.len) continue;
      bool again = false;
      for (const auto &e : rec.entries) {
        again = again || (e.seq > r.seq && e.entry.range.addr == r.region.addr && e.entry.range.len == r.region.len);
      }
      FUZZ_CHECK(again);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const bool keyed = (data[0] & 1) != 0;
  Initiator &in = TheInitiator();
  in.target.Arm(data + 1, size - 1, keyed);
  hixl::ControlLink::Params p;
  p.local_name = kLocalName;
  if (keyed) p.auth = std::shared_ptr<const hixl::auth::Authenticator>(&hixl_fuzz::FuzzKey(), [](const void *) {});
  std::string why;
  FUZZ_CHECK(hixl::ParseEngineAddress("127.0.0.1:" + std::to_string(in.target.port()), &p.remote, &why));
  p.host = {"fuzz-boot-id", 4026531836u, 0};
  p.regions = std::make_shared<hixl::RemoteRegions>();
  std::unique_ptr<hixl::ControlLink> link;
  w::HelloAck ack;
  const hixl::Status opened = Timed(
      [&](hixl::Deadline d) { return hixl::ControlLink::Open(p, in.workers, d, &link, &ack, &why); },
      {hixl::SUCCESS, hixl::FAILED, hixl::TIMEOUT});
  FUZZ_CHECK((opened == hixl::SUCCESS) == (link != nullptr));
  if (link != nullptr) {
    auto done = std::make_shared<hixl::Completion>();
    link->Notify(w::Notify{"fuzz", "hello"}, done);
    Timed([&](hixl::Deadline d) { return hixl::AwaitOrCancel(link->channel(), *done, d); },
          {hixl::SUCCESS, hixl::PARAM_INVALID, hixl::TIMEOUT, hixl::NOT_CONNECTED, hixl::NOTIFY_FAILED,
           hixl::UNSUPPORTED, hixl::RESOURCE_EXHAUSTED, hixl::FAILED});
    Timed([&](hixl::Deadline d) { return link->FetchRegions(d); }, {hixl::SUCCESS, hixl::FAILED, hixl::TIMEOUT});
    link->SayUsing(1);
    link->Close("fuzz run over");
  }
  const Record rec = in.target.Finish();
  FUZZ_CHECK(rec.hello_ok);
  if (opened == hixl::SUCCESS) {
    // Mutual: with a key, the target proved itself and so did we; without
    // one, a target that challenged us was refused.
    FUZZ_CHECK(!keyed || (rec.proved && rec.auth_sent));
    FUZZ_CHECK(keyed || rec.first_type != static_cast<uint8_t>(w::MsgType::kAuthChallenge));
  }
  link.reset();
  in.Barrier();  // the worker has let go of the stream: the run frees what it took (or leaks)
  CheckTable(*p.regions, rec);
  return 0;
}
