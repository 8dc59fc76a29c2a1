// hostile_peer_test.cc: peers that send what no hixl engine would. A raw
// client against a real target engine (malformed frames, a seeded mutation
// fuzz, WRITEs racing DeregisterMem), and a fake target against a real
// initiator (bad replies, bad handshakes, a seeded fuzz of its answers).
// After each case: no crash (the sanitizer builds run this too), the bad
// link closed or answered with an error, no byte changed outside the ranges
// asked for, and a well-behaved link of the same engine still moves bytes
// correctly. Iteration counts: HIXL_FUZZ_ITERS scales both fuzz loops.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "common/log.h"
#include "integration/fixture.h"
#include "integration/net_util.h"
#include "support/region_entries.h"
#include "wire/codec.h"
#include "wire/frame.h"
#include "wire/messages.h"

using namespace hixl_test;
namespace w = hixl::wire;

namespace {

// A deadline `ms` from now, for RecvExactly.
std::chrono::steady_clock::time_point In(int ms) {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
}

std::vector<uint8_t> Fr(w::MsgType t, uint64_t id, const std::vector<uint8_t> &body, uint64_t payload_len = 0,
                        uint32_t status = 0) {
  w::FrameHeader h;
  h.type = t;
  h.req_id = id;
  h.payload_len = payload_len;
  h.status = status;
  return Frame(h, body);
}

std::vector<uint8_t> Segs(std::vector<w::Segment> s) {
  std::vector<uint8_t> b;
  w::EncodeSegments(s.data(), s.size(), &b);
  return b;
}

std::vector<uint8_t> HelloFrame(const std::string &target, uint64_t nonce = 7, uint16_t idx = 0, uint16_t cnt = 1) {
  w::Hello h;
  h.initiator = "adv";
  h.target = target;
  h.link_nonce = nonce;
  h.stream_index = idx;
  h.stream_count = cnt;
  std::vector<uint8_t> b;
  w::EncodeHello(h, &b);
  return Fr(w::MsgType::kHello, 0, b);
}

struct Outcome {
  bool closed = false;
  std::vector<w::FrameHeader> replies;
};

// Reads frames until EOF or `quiet_ms` of silence (at most 10,000 frames).
Outcome Collect(int fd, int quiet_ms = 300) {
  Outcome o;
  for (int frames = 0; frames < 10000; ++frames) {
    uint8_t hdr[w::kHeaderSize];
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, quiet_ms) <= 0) return o;
    ssize_t r = recv(fd, hdr, 1, MSG_PEEK);
    if (r <= 0) {
      o.closed = true;
      return o;
    }
    if (!RecvExactly(fd, hdr, sizeof(hdr), In(2000))) {
      o.closed = true;
      return o;
    }
    w::FrameHeader h;
    if (w::DecodeHeader(hdr, &h) != w::HeaderError::kOk) {
      o.closed = true;
      return o;
    }
    std::vector<uint8_t> rest(h.body_len + h.payload_len);
    if (!rest.empty() && !RecvExactly(fd, rest.data(), rest.size(), In(5000))) {
      o.closed = true;
      return o;
    }
    o.replies.push_back(h);
  }
  return o;
}

// `n`, times HIXL_FUZZ_ITERS / 100 when that is set (a longer run by hand).
int FuzzIters(int n) {
  const char *pct = getenv("HIXL_FUZZ_ITERS");
  return pct == nullptr ? n : std::max(1, n * atoi(pct) / 100);
}

class HostilePeer : public ::testing::Test {
 protected:
  static constexpr size_t kChunk = 64 << 10;
  void SetUp() override {
    hixl::SetLogLevel(hixl::LogLevel::kError);
    if (!getenv("HIXL_TEST_LOUD")) quiet_ = std::make_unique<QuietStderr>();
    ASSERT_TRUE(ServeOnFreePort(t_, &tname_));
    // [guard][A][B][guard]
    mem_ = std::make_unique<LocalBuffer>(4 * kChunk);
    memset(mem_->data(), 0xCC, 4 * kChunk);
    hixl::MemDesc d{};
    d.addr = A();
    d.len = kChunk;
    ASSERT_EQ(t_.RegisterMem(d, hixl::MEM_HOST, ha_), hixl::SUCCESS);
    d.addr = B();
    ASSERT_EQ(t_.RegisterMem(d, hixl::MEM_HOST, hb_), hixl::SUCCESS);
    c_ = std::make_unique<LocalBuffer>(1 << 20);
    RegisterWith(t_, *c_);
    ASSERT_EQ(g_.Initialize("127.0.0.1", {}), hixl::SUCCESS);
    gl_ = std::make_unique<LocalBuffer>(1 << 20);
    RegisterWith(g_, *gl_);
    ASSERT_EQ(g_.Connect(tname_.c_str(), 3000), hixl::SUCCESS);
  }
  void TearDown() override {
    g_.Finalize();
    t_.Finalize();
    quiet_.reset();
  }
  uintptr_t A() const { return mem_->addr() + kChunk; }
  uintptr_t B() const { return mem_->addr() + 2 * kChunk; }
  bool GuardsIntact() const {
    for (size_t i = 0; i < kChunk; ++i) {
      if (mem_->data()[i] != 0xCC || mem_->data()[3 * kChunk + i] != 0xCC) return false;
    }
    return true;
  }
  bool ABIntact() const {
    for (size_t i = kChunk; i < 3 * kChunk; ++i) {
      if (mem_->data()[i] != 0xCC) return false;
    }
    return true;
  }
  // The well-behaved client still works, bytes compared.
  bool GoodClientWorks(int round) {
    size_t len = 4096 + (round * 977) % 60000;
    for (size_t i = 0; i < len; ++i) gl_->data()[i] = static_cast<uint8_t>(i * 31 + round);
    std::vector<hixl::TransferOpDesc> d{{gl_->addr(), c_->addr() + 128, len}};
    if (g_.TransferSync(tname_.c_str(), hixl::WRITE, d, 3000) != hixl::SUCCESS) return false;
    if (memcmp(c_->data() + 128, gl_->data(), len) != 0) return false;
    memset(gl_->data(), 0, len);
    if (g_.TransferSync(tname_.c_str(), hixl::READ, d, 3000) != hixl::SUCCESS) return false;
    return memcmp(c_->data() + 128, gl_->data(), len) == 0;
  }
  // Runs one case: connect, optional handshake, send, collect.
  Outcome Run(const std::vector<uint8_t> &bytes, bool handshake = true, int quiet_ms = 300) {
    int fd = RawConnect(tname_);
    EXPECT_GE(fd, 0);
    if (handshake) {
      SendAll(fd, HelloFrame(tname_));
      uint8_t hdr[w::kHeaderSize];
      w::FrameHeader h;
      EXPECT_TRUE(RecvExactly(fd, hdr, sizeof(hdr), In(3000)));
      EXPECT_EQ(w::DecodeHeader(hdr, &h), w::HeaderError::kOk);
      std::vector<uint8_t> body(h.body_len);
      EXPECT_TRUE(RecvExactly(fd, body.data(), body.size(), In(3000)));
      EXPECT_EQ(h.status, 0u);
    }
    SendAll(fd, bytes);
    Outcome o = Collect(fd, quiet_ms);
    close(fd);
    return o;
  }

  hixl::Hixl t_, g_;
  std::string tname_;
  std::unique_ptr<LocalBuffer> mem_, c_, gl_;
  hixl::MemHandle ha_ = nullptr, hb_ = nullptr;
  std::unique_ptr<QuietStderr> quiet_;
};

std::vector<uint8_t> Cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (auto &p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST_F(HostilePeer, MalformedFrames) {
  struct Case {
    const char *name;
    std::vector<uint8_t> bytes;
    bool handshake;
    int expect;  // 0: closed; 1: error reply(s) (status != 0) or closed; 2: anything but no crash
  };
  std::vector<Case> cases;
  auto raw = [](std::function<void(uint8_t *)> patch, w::MsgType t = w::MsgType::kPing) {
    auto f = Fr(t, 1, {});
    patch(f.data());
    return f;
  };
  const uint64_t kMax = UINT64_MAX;
  std::vector<uint8_t> p16(16, 0xAB);
  cases.push_back({"write before hello", Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{A(), 16}}), 16), p16}), false, 0});
  cases.push_back({"ping before hello", Fr(w::MsgType::kPing, 1, {}), false, 0});
  cases.push_back({"bad magic", raw([](uint8_t *p) { p[0] = 'X'; }), true, 0});
  cases.push_back({"bad version pre", raw([](uint8_t *p) { p[4] = 9; }), false, 0});
  cases.push_back({"bad version post", raw([](uint8_t *p) { p[4] = 9; }), true, 0});
  cases.push_back({"type 0", raw([](uint8_t *p) { p[5] = 0; }), true, 0});
  cases.push_back({"type past the last", raw([](uint8_t *p) { p[5] = w::kMaxMsgType + 1; }), true, 0});
  cases.push_back({"AUTH_CHALLENGE (not a request)", raw([](uint8_t *p) { p[5] = 17; }), true, 0});
  cases.push_back({"AUTH unasked", raw([](uint8_t *p) { p[5] = 18; }), true, 0});
  cases.push_back({"type 255", raw([](uint8_t *p) { p[5] = 255; }), true, 0});
  cases.push_back({"flags", raw([](uint8_t *p) { p[6] = 1; }), true, 0});
  cases.push_back({"body huge", raw([](uint8_t *p) { memset(p + 12, 0xff, 4); }), true, 0});
  cases.push_back({"payload huge", raw([](uint8_t *p) { memset(p + 24, 0xff, 8); }, w::MsgType::kWriteReq), true, 0});
  cases.push_back({"ping with body", Cat({raw([](uint8_t *p) { p[12] = 4; }), {1, 2, 3, 4}}), true, 0});
  cases.push_back({"ping with payload", Cat({raw([](uint8_t *p) { p[24] = 4; }), {1, 2, 3, 4}}), true, 0});
  cases.push_back({"regions req with body", Cat({raw([](uint8_t *p) { p[12] = 1; }, w::MsgType::kRegionsReq), {1}}),
                   true, 0});
  cases.push_back({"reply type as request", Fr(w::MsgType::kWriteAck, 1, {}), true, 0});
  cases.push_back({"revoke as request", Fr(w::MsgType::kRevoke, 1, std::vector<uint8_t>(16)), true, 0});
  cases.push_back({"second hello", HelloFrame("x"), true, 0});
  cases.push_back({"revoke_ack unknown", Fr(w::MsgType::kRevokeAck, 99, {}), true, 0});
  cases.push_back({"using without body", Fr(w::MsgType::kUsing, 1, {}), true, 0});
  cases.push_back({"using cut short", Fr(w::MsgType::kUsing, 1, {1}), true, 0});
  cases.push_back({"hello wrong target", HelloFrame("127.0.0.1:1"), false, 0});
  cases.push_back({"hello idx>=cnt", HelloFrame("x", 1, 3, 2), false, 0});
  cases.push_back({"hello garbage", Fr(w::MsgType::kHello, 0, {0xff, 0xff, 0xff, 0xff, 1}), false, 0});
  {
    auto f = Fr(w::MsgType::kHello, 0, std::vector<uint8_t>(5000, 0));
    cases.push_back({"hello too long", f, false, 0});
  }
  cases.push_back({"write empty body", Fr(w::MsgType::kWriteReq, 1, {}, 16), true, 0});
  cases.push_back({"write n=0", Fr(w::MsgType::kWriteReq, 1, {0, 0, 0, 0}), true, 0});
  {
    auto b = Segs({{A(), 16}});
    b[0] = 2;  // count 2, one segment
    cases.push_back({"write count>segs", Cat({Fr(w::MsgType::kWriteReq, 1, b, 16), p16}), true, 0});
    b[0] = 0xff;
    b[1] = 0xff;
    b[2] = 0xff;
    b[3] = 0xff;
    cases.push_back({"write count=max", Cat({Fr(w::MsgType::kWriteReq, 1, b, 16), p16}), true, 0});
  }
  cases.push_back({"write len 0", Fr(w::MsgType::kWriteReq, 1, Segs({{A(), 0}}), 0), true, 0});
  cases.push_back({"write wraps", Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{kMax - 7, 16}}), 16), p16}), true, 0});
  cases.push_back({"write wraps to 0", Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{kMax - 15, 16}}), 16), p16}), true, 0});
  cases.push_back({"write payload mismatch", Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{A(), 16}}), 17), p16, {0}}),
                   true, 0});
  cases.push_back({"write straddle A/B", Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{B() - 8, 16}}), 16), p16}), true, 1});
  cases.push_back({"write before A", Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{A() - 1, 2}}), 2), {1, 2}}), true, 1});
  cases.push_back({"write after B", Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{B() + kChunk - 1, 2}}), 2), {1, 2}}),
                   true, 1});
  cases.push_back({"write 1 good 1 bad",
                   Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{A(), 8}, {B() + kChunk, 8}}), 16), p16}), true, 1});
  cases.push_back({"write huge len in A", Fr(w::MsgType::kWriteReq, 1, Segs({{A(), 1ull << 30}}), 1ull << 30), true, 2});
  cases.push_back({"write len > 1GiB", Fr(w::MsgType::kWriteReq, 1, Segs({{A(), (1ull << 30) + 1}}), 0), true, 0});
  cases.push_back({"read straddle", Fr(w::MsgType::kReadReq, 1, Segs({{B() - 8, 16}})), true, 1});
  cases.push_back({"read huge", Fr(w::MsgType::kReadReq, 1, Segs({{A(), kMax}})), true, 0});
  cases.push_back({"read wraps", Fr(w::MsgType::kReadReq, 1, Segs({{kMax, 1}})), true, 1});
  cases.push_back({"read addr 0", Fr(w::MsgType::kReadReq, 1, Segs({{0, 1}})), true, 1});
  cases.push_back({"read with payload", Cat({Fr(w::MsgType::kReadReq, 1, Segs({{A(), 1}}), 1), {0}}), true, 0});
  cases.push_back({"read many segs sum>1GiB",
                   Fr(w::MsgType::kReadReq, 1, Segs(std::vector<w::Segment>(2048, w::Segment{A(), 1u << 20}))), true,
                   0});
  cases.push_back({"notify long name", [] {
                     std::vector<uint8_t> b;
                     w::Writer wr(&b);
                     wr.Str(std::string(1025, 'a'));
                     wr.Str("m");
                     return Fr(w::MsgType::kNotifyReq, 1, b);
                   }(), true, 0});
  cases.push_back({"notify len max", Fr(w::MsgType::kNotifyReq, 1, {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}), true, 0});
  // A newer peer's field after the two strings: read past (protocol.md).
  cases.push_back({"notify trailing", Fr(w::MsgType::kNotifyReq, 1, {0, 0, 0, 0, 0, 0, 0, 0, 9}), true, 2});
  cases.push_back({"truncated body", Cat({raw([](uint8_t *p) { p[12] = 100; }, w::MsgType::kReadReq), {1, 2, 3}}),
                   true, 2});
  cases.push_back({"dup ids", Cat({Fr(w::MsgType::kPing, 5, {}), Fr(w::MsgType::kPing, 5, {}),
                                   Fr(w::MsgType::kReadReq, 5, Segs({{A(), 8}}))}),
                   true, 2});
  cases.push_back({"half header", [] { auto f = HelloFrame("x"); f.resize(10); return f; }(), false, 2});
  int round = 0;
  for (const auto &c : cases) {
    Outcome o = Run(c.bytes, c.handshake);
    bool any_error = false;
    for (auto &h : o.replies) any_error = any_error || h.status != 0;
    if (c.expect == 0) {
      EXPECT_TRUE(o.closed) << c.name;
    }
    if (c.expect == 1) {
      EXPECT_TRUE(o.closed || any_error) << c.name;
    }
    EXPECT_TRUE(GuardsIntact()) << c.name;
    EXPECT_TRUE(ABIntact()) << c.name;
    EXPECT_TRUE(GoodClientWorks(++round)) << c.name;
  }
}

TEST_F(HostilePeer, Fuzz) {
  // Captured-style valid frames (as a real initiator would send them).
  std::vector<std::vector<uint8_t>> seeds;
  std::vector<uint8_t> p16(16, 0x5A);
  seeds.push_back(Cat({Fr(w::MsgType::kWriteReq, 1, Segs({{A(), 8}, {B() + 8, 8}}), 16), p16}));
  seeds.push_back(Fr(w::MsgType::kReadReq, 2, Segs({{A(), 100}, {B(), 100}})));
  seeds.push_back(Fr(w::MsgType::kPing, 3, {}));
  seeds.push_back(Fr(w::MsgType::kRegionsReq, 4, {}));
  {
    std::vector<uint8_t> b;
    w::Notify n{"nm", "msg"};
    w::EncodeNotify(n, &b);
    seeds.push_back(Fr(w::MsgType::kNotifyReq, 5, b));
  }
  seeds.push_back(Fr(w::MsgType::kUsing, 0, {1, 0}));
  seeds.push_back(Fr(w::MsgType::kRevokeAck, 6, {}));
  const std::vector<uint64_t> interesting = {0, 1, 0x7f, 0xff, 0xffff, 0xffffffff, UINT64_MAX, UINT64_MAX - 1,
                                              A(), A() - 1, B(), B() - 1, B() + kChunk, kChunk, 1ull << 30,
                                              (1ull << 30) + 1, 4u << 20, 65536, 65537};
  std::mt19937_64 rng(12345);
  const int kIters = FuzzIters(600);
  for (int it = 0; it < kIters; ++it) {
    std::vector<uint8_t> bytes;
    int nframes = 1 + rng() % 3;
    for (int k = 0; k < nframes; ++k) {
      auto f = seeds[rng() % seeds.size()];
      int muts = 1 + rng() % 4;
      for (int m = 0; m < muts; ++m) {
        size_t pos = rng() % f.size();
        switch (rng() % 6) {
          case 0: f[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
          case 1: f[pos] = static_cast<uint8_t>(rng()); break;
          case 2: {  // an interesting value at a field-ish offset
            uint64_t v = interesting[rng() % interesting.size()];
            size_t width = (rng() % 2) ? 8 : 4;
            pos = (pos / 4) * 4;
            for (size_t i = 0; i < width && pos + i < f.size(); ++i) f[pos + i] = static_cast<uint8_t>(v >> (8 * i));
            break;
          }
          case 3: f.resize(pos); break;  // truncate
          case 4: f.insert(f.begin() + pos, static_cast<uint8_t>(rng())); break;
          case 5: if (f.size() > 1) f.erase(f.begin() + pos); break;
        }
        if (f.empty()) f.push_back(0);
      }
      bytes.insert(bytes.end(), f.begin(), f.end());
    }
    bool hs = rng() % 8 != 0;
    // Keep it bounded: anything not closed within 30 ms is dropped by us.
    Outcome o = Run(bytes, hs, 30);
    (void)o;
    EXPECT_TRUE(GuardsIntact()) << "iter " << it;
    if (it % 50 == 49) {
      ASSERT_TRUE(GoodClientWorks(it)) << "iter " << it;
    }
  }
  EXPECT_TRUE(GoodClientWorks(99));
}

TEST_F(HostilePeer, WriteIntoRegionBeingDeregistered) {
  // A raw WRITE of 4 MiB into region D; half the payload sent, then the
  // target deregisters D; then the rest of the payload. After DeregisterMem
  // returns, D must not change.
  constexpr size_t kLen = 4u << 20;
  LocalBuffer d(kLen);
  memset(d.data(), 0x11, kLen);
  hixl::MemHandle hd = RegisterWith(t_, d);
  int fd = RawConnect(tname_);
  ASSERT_GE(fd, 0);
  SendAll(fd, HelloFrame(tname_));
  Outcome hs = Collect(fd, 200);
  ASSERT_EQ(hs.replies.size(), 1u);
  SendAll(fd, Fr(w::MsgType::kWriteReq, 1, Segs({{d.addr(), kLen}}), kLen));
  std::vector<uint8_t> half(kLen / 2, 0x22);
  SendAll(fd, half);
  std::atomic<bool> dereg_done{false};
  std::thread t([&] {
    EXPECT_EQ(t_.DeregisterMem(hd), hixl::SUCCESS);
    dereg_done = true;
  });
  // Trickle: keep sending a byte every 100 ms so "progress" continues.
  auto t0 = std::chrono::steady_clock::now();
  while (!dereg_done && SecondsSince(t0) < 15) {
    std::vector<uint8_t> one(1, 0x33);
    if (!SendAll(fd, one)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  t.join();
  double took = SecondsSince(t0);
  memset(d.data(), 0x44, kLen);
  std::vector<uint8_t> rest(kLen, 0x55);
  SendAll(fd, rest);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  size_t changed = 0;
  for (size_t i = 0; i < kLen; ++i) changed += d.data()[i] != 0x44;
  EXPECT_EQ(changed, 0u) << "dereg took " << took << " s";
  close(fd);
  EXPECT_TRUE(GoodClientWorks(7));
}

TEST_F(HostilePeer, UnreadReadReplyOfRegionBeingDeregistered) {
  constexpr size_t kLen = 16u << 20;
  LocalBuffer d(kLen);
  hixl::MemHandle hd = RegisterWith(t_, d);
  int fd = RawConnect(tname_);
  ASSERT_GE(fd, 0);
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  SendAll(fd, HelloFrame(tname_));
  Outcome hs = Collect(fd, 200);
  ASSERT_EQ(hs.replies.size(), 1u);
  for (int i = 0; i < 4; ++i) SendAll(fd, Fr(w::MsgType::kReadReq, 1 + i, Segs({{d.addr(), kLen}})));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(t_.DeregisterMem(hd), hixl::SUCCESS);
  EXPECT_LT(SecondsSince(t0), 12.0);
  close(fd);
  EXPECT_TRUE(GoodClientWorks(8));
}

// ---------------- hostile target ----------------

// Plays the target of a tcp link with one data stream (tcp.streams_per_link
// 1): answers the control stream's HELLO and the data stream's with
// `ack_frame`, then lets `respond` answer what comes on the data stream. The
// control stream is kept open and never read.
struct FakeTarget {
  SilentListener l;
  std::thread th;
  std::atomic<bool> stop{false};
  // respond(fd, req header, body, payload) -> false: close.
  using Responder = std::function<bool(int, const w::FrameHeader &, const std::vector<uint8_t> &)>;
  // A stream accepted and its HELLO answered, or -1 (none in 5 s, or stop).
  int Accept(const std::vector<uint8_t> &ack_frame) {
    pollfd p{l.fd, POLLIN, 0};
    int ready = 0;
    for (int i = 0; i < 100 && ready == 0 && !stop; ++i) ready = poll(&p, 1, 50);
    if (ready <= 0) return -1;
    int fd = accept(l.fd, nullptr, nullptr);
    if (fd < 0) return -1;
    uint8_t hdr[w::kHeaderSize];
    w::FrameHeader h;
    if (RecvExactly(fd, hdr, sizeof(hdr), In(3000)) && w::DecodeHeader(hdr, &h) == w::HeaderError::kOk) {
      std::vector<uint8_t> body(h.body_len);
      if (RecvExactly(fd, body.data(), body.size(), In(3000)) && SendAll(fd, ack_frame)) return fd;
    }
    close(fd);
    return -1;
  }
  void Start(std::vector<uint8_t> ack_frame, Responder respond) {
    th = std::thread([this, ack_frame, respond] {
      const int control = Accept(ack_frame);
      const int data = control >= 0 ? Accept(ack_frame) : -1;
      std::vector<int> open;
      if (data >= 0) open = {control, data};
      // Both streams get `respond`'s answers: region tables on the control
      // stream, transfers on the data stream (and REVOKEs on either).
      while (!open.empty() && !stop) {
        std::vector<pollfd> p;
        for (int fd : open) p.push_back({fd, POLLIN, 0});
        if (poll(p.data(), p.size(), 50) <= 0) continue;
        for (size_t i = 0; i < p.size(); ++i) {
          if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
          const int fd = p[i].fd;
          uint8_t hdr[w::kHeaderSize];
          w::FrameHeader h;
          bool ok = RecvExactly(fd, hdr, sizeof(hdr), In(3000)) && w::DecodeHeader(hdr, &h) == w::HeaderError::kOk;
          std::vector<uint8_t> b(ok ? h.body_len + h.payload_len : 0);
          ok = ok && (b.empty() || RecvExactly(fd, b.data(), b.size(), In(3000))) && respond(fd, h, b);
          if (!ok) open.erase(std::find(open.begin(), open.end(), fd));
        }
      }
      // Keep the fds open until stop, so the initiator must detect by itself.
      while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (data >= 0) close(data);
      if (control >= 0) close(control);
    });
  }
  ~FakeTarget() {
    stop = true;
    if (th.joinable()) th.join();
  }
};

std::vector<uint8_t> AckFrame(std::vector<w::RegionInfo> regions) {
  w::HelloAck a;
  a.target = "fake";
  a.host.boot_id = "another host";
  a.regions = hixl_test::HostPage(regions);
  std::vector<uint8_t> b;
  w::EncodeHelloAck(a, &b);
  return Fr(w::MsgType::kHelloAck, 0, b);
}

TEST_F(HostilePeer, HostileTargetReplies) {
  constexpr uint64_t kR = 0x100000;
  struct HCase {
    const char *name;
    FakeTarget::Responder respond;
  };
  std::vector<HCase> cases;
  auto reply = [](w::MsgType t, uint64_t id_delta, std::vector<uint8_t> body, uint64_t pl, uint32_t st,
                  std::vector<uint8_t> payload) {
    return [=](int fd, const w::FrameHeader &h, const std::vector<uint8_t> &) {
      if (h.type == w::MsgType::kPing) return SendAll(fd, Fr(w::MsgType::kPong, h.req_id, {}));
      SendAll(fd, Cat({Fr(t, h.req_id + id_delta, body, pl, st), payload}));
      return true;
    };
  };
  cases.push_back({"resp huge payload", reply(w::MsgType::kReadResp, 0, {}, 1ull << 30, 0, {})});
  cases.push_back({"resp wrong id", reply(w::MsgType::kReadResp, 1, {}, 64, 0, std::vector<uint8_t>(64))});
  cases.push_back({"resp wrong type", reply(w::MsgType::kWriteAck, 0, {}, 0, 0, {})});
  cases.push_back({"resp with body", reply(w::MsgType::kReadResp, 0, {1, 2, 3}, 64, 0, std::vector<uint8_t>(64))});
  cases.push_back({"resp short payload", reply(w::MsgType::kReadResp, 0, {}, 64, 0, std::vector<uint8_t>(10))});
  cases.push_back({"resp longer payload", reply(w::MsgType::kReadResp, 0, {}, 65, 0, std::vector<uint8_t>(65))});
  cases.push_back({"resp bad status", reply(w::MsgType::kReadResp, 0, {}, 0, 0xdeadbeef, {})});
  cases.push_back({"resp error with payload", reply(w::MsgType::kReadResp, 0, {}, 64, 103900, std::vector<uint8_t>(64))});
  cases.push_back({"revoke short", reply(w::MsgType::kRevoke, 0, std::vector<uint8_t>(15), 0, 0, {})});
  cases.push_back({"pong unasked", reply(w::MsgType::kPong, 0, {}, 0, 0, {})});
  cases.push_back({"regions resp unasked", reply(w::MsgType::kRegionsResp, 0, {0, 0, 0, 0}, 0, 0, {})});
  cases.push_back({"garbage", [](int fd, const w::FrameHeader &, const std::vector<uint8_t> &) {
                     SendAll(fd, std::vector<uint8_t>(100, 0xEE));
                     return true;
                   }});
  cases.push_back({"silence", [](int, const w::FrameHeader &, const std::vector<uint8_t> &) { return true; }});
  auto cfg = ResourceConfig("{\"tcp.streams_per_link\": 1, \"heartbeat.interval_ms\": 0}");
  int round = 100;
  for (auto &c : cases) {
    hixl::Hixl e;
    ASSERT_EQ(e.Initialize("127.0.0.1", cfg), hixl::SUCCESS);
    LocalBuffer local(3 * 4096);
    memset(local.data(), 0xCC, local.size());
    hixl::MemDesc md{};
    md.addr = local.addr();
    md.len = local.size();
    hixl::MemHandle h;
    ASSERT_EQ(e.RegisterMem(md, hixl::MEM_HOST, h), hixl::SUCCESS);
    FakeTarget ft;
    ft.Start(AckFrame({{kR, 1 << 20}}), c.respond);
    ASSERT_EQ(e.Connect(ft.l.name().c_str(), 3000), hixl::SUCCESS) << c.name;
    ASSERT_EQ(e.Connect(tname_.c_str(), 3000), hixl::SUCCESS) << c.name;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<hixl::TransferOpDesc> d{{local.addr() + 4096, kR, 64}};
    hixl::Status s = e.TransferSync(ft.l.name().c_str(), hixl::READ, d, 1000);
    double took = SecondsSince(t0);
    EXPECT_LT(took, 2.5) << c.name;
    EXPECT_NE(s, hixl::SUCCESS) << c.name;
    bool guard = true;
    for (size_t i = 0; i < 4096; ++i) guard = guard && local.data()[i] == 0xCC && local.data()[8192 + i] == 0xCC;
    for (size_t i = 64; i < 4096; ++i) guard = guard && local.data()[4096 + i] == 0xCC;
    EXPECT_TRUE(guard) << c.name;
    // The other link of this engine still works.
    for (size_t i = 0; i < 4096; ++i) local.data()[i] = static_cast<uint8_t>(i + round);
    std::vector<hixl::TransferOpDesc> g{{local.addr(), c_->addr(), 4096}};
    EXPECT_EQ(e.TransferSync(tname_.c_str(), hixl::WRITE, g, 3000), hixl::SUCCESS) << c.name;
    EXPECT_EQ(memcmp(c_->data(), local.data(), 4096), 0) << c.name;
    ++round;
    ft.stop = true;
    e.Finalize();
  }
}

TEST_F(HostilePeer, HostileTargetHandshakes) {
  auto cfg = ResourceConfig("{\"tcp.streams_per_link\": 1}");
  std::vector<std::pair<const char *, std::vector<uint8_t>>> acks;
  acks.push_back({"wrapping region", AckFrame({{UINT64_MAX - 1, 16}})});
  acks.push_back({"zero-len region", AckFrame({{0x1000, 0}})});
  {
    auto f = AckFrame({{0x1000, 16}});
    // region count 2 with one region: patch the page's count (its section is
    // id 8: u64 generation, u32 total, u32 first, then the count).
    size_t at = 0;
    w::Reader r(f.data() + w::kHeaderSize, f.size() - w::kHeaderSize);
    uint16_t id = 0;
    w::Reader section(nullptr, 0);
    while (r.NextSection(&id, &section) && id != 8) {
    }
    ASSERT_EQ(id, 8);
    at = f.size() - r.remaining() - section.remaining() + 16;
    f[at] = 2;
    acks.push_back({"count>regions", f});
    f[at] = 0xff;
    f[at + 1] = 0xff;
    f[at + 2] = 0xff;
    f[at + 3] = 0xff;
    acks.push_back({"count=max", f});
  }
  {
    auto f = AckFrame({});
    f[12] = 0xff;  // body_len huge
    f[13] = 0xff;
    f[14] = 0x3f;
    f[15] = 0;
    acks.push_back({"ack body 4MiB-ish not sent", f});
  }
  acks.push_back({"ack with payload", [] {
                    auto f = AckFrame({});
                    f[24] = 1;
                    return f;
                  }()});
  acks.push_back({"ack wrong type", Fr(w::MsgType::kPong, 0, {})});
  acks.push_back({"garbage", std::vector<uint8_t>(64, 0x41)});
  for (auto &[name, frame] : acks) {
    hixl::Hixl e;
    ASSERT_EQ(e.Initialize("127.0.0.1", cfg), hixl::SUCCESS);
    FakeTarget ft;
    ft.Start(frame, [](int, const w::FrameHeader &, const std::vector<uint8_t> &) { return true; });
    auto t0 = std::chrono::steady_clock::now();
    hixl::Status s = e.Connect(ft.l.name().c_str(), 1000);
    EXPECT_NE(s, hixl::SUCCESS) << name;
    EXPECT_LT(SecondsSince(t0), 2.5) << name;
    ft.stop = true;
    e.Finalize();
  }
}

TEST_F(HostilePeer, HostileTargetFuzz) {
  constexpr uint64_t kR = 0x100000;
  auto cfg = ResourceConfig("{\"tcp.streams_per_link\": 1, \"heartbeat.interval_ms\": 0}");
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", cfg), hixl::SUCCESS);
  LocalBuffer local(3 * 65536);
  hixl::MemDesc md{};
  md.addr = local.addr();
  md.len = local.size();
  hixl::MemHandle h;
  ASSERT_EQ(e.RegisterMem(md, hixl::MEM_HOST, h), hixl::SUCCESS);
  ASSERT_EQ(e.Connect(tname_.c_str(), 3000), hixl::SUCCESS);
  std::mt19937_64 rng(777);
  std::map<int, int> stats;
  int connected = 0;
  const int kIters = FuzzIters(100);
  const std::vector<uint64_t> interesting = {0, 1, 15, 16, 17, 64, 65, 0xffffffff, UINT64_MAX, 1ull << 30, 4u << 20};
  for (int it = 0; it < kIters; ++it) {
    memset(local.data(), 0xCC, local.size());
    uint64_t seed = rng();
    FakeTarget ft;
    ft.Start(AckFrame({{kR, 1 << 20}}), [seed, interesting](int fd, const w::FrameHeader &req, const std::vector<uint8_t> &body) {
      std::mt19937_64 r(seed ^ req.req_id);
      std::vector<uint8_t> out;
      // Sometimes a REVOKE push first (maybe malformed).
      if (r() % 4 == 0) {
        std::vector<uint8_t> rb;
        w::EncodeRevoke({kR, 1 << 20}, &rb);
        auto f = Fr(w::MsgType::kRevoke, r() % 3, rb);
        out.insert(out.end(), f.begin(), f.end());
      }
      uint64_t payload = 0;
      std::vector<uint8_t> rbody;
      if (req.type == w::MsgType::kReadReq) {
        std::vector<w::Segment> segs;
        uint64_t total = 0;
        w::DecodeSegments(body.data(), req.body_len, &segs, &total);
        payload = total;
      } else if (req.type == w::MsgType::kRegionsReq) {
        w::EncodeRegionPage(hixl_test::HostPage({{kR, 1 << 20}}), &rbody);
      }
      auto f = Fr(w::ReplyOf(req.type), req.req_id, rbody, payload);
      f.resize(f.size() + payload, 0x77);
      int muts = r() % 4;
      for (int m = 0; m < muts; ++m) {
        if (f.empty()) f.push_back(0);
        size_t pos = r() % f.size();
        switch (r() % 5) {
          case 0: f[pos] ^= static_cast<uint8_t>(1u << (r() % 8)); break;
          case 1: {
            uint64_t v = interesting[r() % interesting.size()];
            pos = (pos / 4) * 4;
            size_t width = (r() % 2) ? 8 : 4;
            for (size_t i = 0; i < width && pos + i < f.size(); ++i) f[pos + i] = static_cast<uint8_t>(v >> (8 * i));
            break;
          }
          case 2: f.resize(pos); break;
          case 3: f.insert(f.begin() + pos, static_cast<uint8_t>(r())); break;
          case 4: f[pos] = static_cast<uint8_t>(r()); break;
        }
      }
      out.insert(out.end(), f.begin(), f.end());
      SendAll(fd, out);
      return true;
    });
    if (e.Connect(ft.l.name().c_str(), 2000) != hixl::SUCCESS) continue;
    ++connected;
    for (int k = 0; k < 3; ++k) {
      memset(local.data(), 0xCC, local.size());
      const bool rd = rng() % 2;
      const size_t len = 1 + rng() % 60000;
      const uint64_t roff = rng() % ((1 << 20) - len);
      std::vector<hixl::TransferOpDesc> d{{local.addr() + 65536, kR + roff, len}};
      if (rng() % 3 == 0) d.push_back({local.addr() + 65536 + 60000, kR + 2 * (1 << 20), 100});  // unknown: refresh
      auto t0 = std::chrono::steady_clock::now();
      hixl::Status st = e.TransferSync(ft.l.name().c_str(), rd ? hixl::READ : hixl::WRITE, d, 300);
      ++stats[st];
      EXPECT_LT(SecondsSince(t0), 2.0) << "iter " << it;
      bool guard = true;
      size_t bad_at = 0;
      for (size_t i = 0; i < local.size(); ++i) {
        bool allowed = (i >= 65536 && i < 65536 + len) || (d.size() > 1 && i >= 125536 && i < 125636);
        if (!allowed && local.data()[i] != 0xCC) {
          guard = false;
          bad_at = i;
          break;
        }
      }
      EXPECT_TRUE(guard) << "iter " << it << " k " << k << " rd " << rd << " len " << len << " ndesc " << d.size()
                         << " bad_at " << bad_at << " val " << int(local.data()[bad_at]);
    }
    ft.stop = true;
    e.Disconnect(ft.l.name().c_str(), 1000);
    if (it % 25 == 24) {
      for (size_t i = 0; i < 4096; ++i) local.data()[i] = static_cast<uint8_t>(i + it);
      std::vector<hixl::TransferOpDesc> g{{local.addr(), c_->addr(), 4096}};
      EXPECT_EQ(e.TransferSync(tname_.c_str(), hixl::WRITE, g, 3000), hixl::SUCCESS) << it;
      EXPECT_EQ(memcmp(c_->data(), local.data(), 4096), 0) << it;
    }
  }
  e.Finalize();
  // Most handshakes carry no mutation: if none connected, the loop tested nothing.
  EXPECT_GT(connected, kIters / 2);
  for (auto [k, v] : stats) RecordProperty("status_" + std::to_string(k), v);
}

}  // namespace
