// make_seeds.cc: writes the seed corpora of the fuzz targets whose input is
// protocol messages, with the protocol's own encoders, so that the seeds
// follow the wire format as it changes (no hand-written hex):
//
//   hixl_fuzz_seeds DIR     writes DIR/<target>/<seed> (fuzz/corpus is DIR)
//
// The fuzz build's ctest (fuzz.seeds.current) checks that fuzz/corpus/ holds
// what this writes. Each seed is a small valid case (or one refused for a
// reason worth keeping), named for what it is.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hixl/hixl_types.h"
#include "target_schedule.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace {

namespace w = hixl::wire;
using Bytes = std::vector<uint8_t>;

// What the handshake targets agree on with their seeds.
constexpr char kTarget[] = "127.0.0.1:26000";  // the target engine of handshake_target
constexpr char kInitiator[] = "127.0.0.1:40000";
constexpr uint16_t kTcp = 1, kShm = 2;  // transports' wire ids

std::string g_dir;
int g_failed = 0;

void Write(const std::string &target, const std::string &name, const Bytes &b) {
  const std::string dir = g_dir + "/" + target;
  mkdir(g_dir.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  FILE *f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (f == nullptr || std::fwrite(b.data(), 1, b.size(), f) != b.size() || std::fclose(f) != 0) {
    std::perror((dir + "/" + name).c_str());
    ++g_failed;
  }
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes &p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes U32(uint32_t v) { return {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)}; }

Bytes Frame(w::MsgType type, uint64_t req_id, const Bytes &body = {}, const Bytes &payload = {}, uint32_t status = 0,
            uint8_t version = w::kVersion) {
  w::FrameHeader h;
  h.version = version;
  h.type = type;
  h.status = status;
  h.req_id = req_id;
  h.body_len = static_cast<uint32_t>(body.size());
  h.payload_len = payload.size();
  Bytes out(w::kHeaderSize);
  w::EncodeHeader(h, out.data());
  return Cat({out, body, payload});
}

w::Hello MakeHello(uint16_t index, uint16_t count) {
  w::Hello m;
  m.initiator = kInitiator;
  m.target = kTarget;
  m.link_nonce = 0x1122334455667788ull;
  m.stream_index = index;
  m.stream_count = count;
  m.host = {"fuzz-boot-id", 4026531836u, 0};
  if (index == 0) m.offers = {{kTcp, {}}, {kShm, U32(1)}};  // pid 1: not ours, so shm is refused
  return m;
}

Bytes Hello(uint16_t index = 0, uint16_t count = 1, uint32_t heartbeat_ms = 0, const std::string &target = kTarget,
            bool auth = false) {
  w::Hello m = MakeHello(index, count);
  m.heartbeat_ms = heartbeat_ms;
  m.target = target;
  m.has_auth = auth;
  if (auth) m.auth_nonce.fill(0x4e);
  Bytes b;
  w::EncodeHello(m, &b);
  return b;
}

Bytes Segments(std::initializer_list<w::Segment> segs) {
  Bytes b;
  w::EncodeSegments(segs.begin(), segs.size(), &b);
  return b;
}

w::RegionEntry Entry(uint64_t addr, uint64_t len, uint8_t kind = 0, w::Sections sections = {}) {
  return {{addr, len}, static_cast<w::MemKind>(kind), std::move(sections)};
}

w::RegionPage Page(uint64_t generation, uint32_t total, uint32_t first, std::vector<w::RegionEntry> entries) {
  w::RegionPage p;
  p.generation = generation;
  p.total = total;
  p.first = first;
  p.count = static_cast<uint32_t>(entries.size());
  p.entries = std::move(entries);
  return p;
}

Bytes PageBody(const w::RegionPage &p) {
  Bytes b;
  w::EncodeRegionPage(p, &b);
  return b;
}

Bytes AckBody(const w::RegionPage &page, const std::string &reason = "") {
  w::HelloAck a;
  a.target = kTarget;
  a.reason = reason;
  a.host = {"fuzz-boot-id", 4026531836u, 0};
  a.regions = page;
  if (reason.empty()) a.answers = {{kShm, U32(4242)}};
  Bytes b;
  w::EncodeHelloAck(a, &b);
  return b;
}

Bytes NotifyBody(const std::string &name, const std::string &msg) {
  Bytes b;
  w::EncodeNotify({name, msg}, &b);
  return b;
}

// AUTH_CHALLENGE and AUTH bodies; a proof of zeros is the fuzzers'
// placeholder for the right one (fuzz_auth.h).
Bytes ChallengeBody(uint8_t mac_byte = 0) {
  w::AuthChallenge c;
  c.nonce_t.fill(0x54);
  c.mac_t.fill(mac_byte);
  Bytes b;
  w::EncodeAuthChallenge(c, &b);
  return b;
}

Bytes AuthBody(uint8_t mac_byte = 0) {
  w::AuthBytes mac;
  mac.fill(mac_byte);
  Bytes b;
  w::EncodeAuth(mac, &b);
  return b;
}

Bytes RevokeBody(uint64_t addr, uint64_t len) {
  Bytes b;
  w::EncodeRevoke({addr, len}, &b);
  return b;
}

void WireMessages() {
  const char *t = "wire_messages";
  Write(t, "hello", Cat({{0}, Hello()}));
  Write(t, "hello_heartbeat", Cat({{0}, Hello(2, 4, 500)}));
  const auto two = Page(7, 2, 0, {Entry(0x1000, 4096), Entry(0x9000, 64, 1, {{0x7f00, {1, 2, 3}}})});
  Write(t, "hello_ack", Cat({{1}, AckBody(two)}));
  Write(t, "hello_ack_refusal", Cat({{1}, AckBody(w::RegionPage(), "this is engine x, not y")}));
  Write(t, "region_page", Cat({{2}, PageBody(Page(9, 5, 1, {Entry(0x2000, 8192), Entry(0x8000, 1, 7)}))}));
  Bytes req;
  w::EncodeRegionsReq(3, &req);
  Write(t, "regions_req", Cat({{3}, req}));
  Write(t, "segments", Cat({{4}, Segments({{0x1000, 16}, {0x2000, 4096}, {0x10, 1}})}));
  Write(t, "revoke", Cat({{5}, RevokeBody(0x1000, 4096)}));
  Bytes use;
  w::EncodeUsing(kShm, &use);
  Write(t, "using", Cat({{6}, use}));
  Write(t, "notify", Cat({{7}, NotifyBody("ready", "layer 3 of 40")}));
  Write(t, "hello_auth", Cat({{0}, Hello(0, 1, 0, kTarget, true)}));
  Write(t, "auth_challenge", Cat({{8}, ChallengeBody(0x4d)}));
  Write(t, "auth", Cat({{9}, AuthBody(0x4d)}));
}

// A schedule seed of handshake_target under which the engine revokes region
// `which` after a piece that ends in [from, to] of a stream of `size` bytes
// (the pieces as the fuzzer cuts them).
Bytes SeedRevoking(size_t size, size_t from, size_t to, size_t which) {
  for (uint32_t seed = 1; seed < 1000000; ++seed) {
    hixl_fuzz::TargetSchedule s(seed);
    for (size_t sent = 0; sent < size;) {
      sent += std::min(s.Piece(size), size - sent);
      size_t w = 0;
      if (s.Revoke(&w) && w == which && sent >= from && sent <= to) return U32(seed);
    }
  }
  std::fprintf(stderr, "no schedule seed revokes within [%zu, %zu]\n", from, to);
  ++g_failed;
  return U32(0);
}

// handshake_target: 4 bytes of schedule seed (top bit: the engine has a
// key), then what the initiator sends. Its regions (A, B, C read-only) are
// at a fixed address.
constexpr uint64_t kBase = 0x10000000;
constexpr uint64_t kRegionA = kBase + 4096, kRegionB = kBase + 3 * 4096, kRegionC = kBase + 20 * 4096;

void HandshakeTarget() {
  const char *t = "handshake_target";
  const Bytes seed = U32(1);
  const Bytes hello = Frame(w::MsgType::kHello, 0, Hello());
  Bytes regions_req, use;
  w::EncodeRegionsReq(0, &regions_req);
  w::EncodeUsing(kTcp, &use);
  Write(t, "hello", Cat({seed, hello}));
  Write(t, "control_requests",
        Cat({seed, hello, Frame(w::MsgType::kUsing, 0, use), Frame(w::MsgType::kRegionsReq, 1, regions_req),
             Frame(w::MsgType::kNotifyReq, 2, NotifyBody("ready", "go")), Frame(w::MsgType::kPing, 3),
             Frame(w::MsgType::kBye, 4)}));
  Write(t, "read_write",
        Cat({seed, hello, Frame(w::MsgType::kReadReq, 1, Segments({{kRegionA, 16}, {kRegionB + 100, 300}})),
             Frame(w::MsgType::kWriteReq, 2, Segments({{kRegionB, 8}}), Bytes(8, 'w')),
             Frame(w::MsgType::kReadReq, 3, Segments({{kRegionC, 4096}}))}));
  Write(t, "data_stream",
        Cat({seed, Frame(w::MsgType::kHello, 0, Hello(1, 2)), Frame(w::MsgType::kReadReq, 1, Segments({{kRegionA, 8}})),
             Frame(w::MsgType::kWriteReq, 2, Segments({{kRegionA + 8, 4}}), Bytes(4, 'x'))}));
  Write(t, "outside_regions",
        Cat({seed, hello, Frame(w::MsgType::kReadReq, 1, Segments({{kBase, 16}})),
             Frame(w::MsgType::kWriteReq, 2, Segments({{kRegionA + 4090, 16}}), Bytes(16, 'g')),
             Frame(w::MsgType::kWriteReq, 3, Segments({{kRegionC, 4}}), Bytes(4, 'r'))}));
  // Region B revoked after the HELLO and before the REVOKE_ACK goes (id 1:
  // the run's first revocation), and an acknowledgement of one never made.
  const Bytes ping = Frame(w::MsgType::kPing, 1), ack1 = Frame(w::MsgType::kRevokeAck, 1);
  const Bytes acked = Cat({hello, ping, ack1, Frame(w::MsgType::kPing, 2)});
  Write(t, "revoke_ack", Cat({SeedRevoking(acked.size(), hello.size(), hello.size() + ping.size(), 1), acked}));
  Write(t, "revoke_ack_unknown", Cat({seed, hello, ping, Frame(w::MsgType::kRevokeAck, 9)}));
  Write(t, "heartbeat", Cat({seed, Frame(w::MsgType::kHello, 0, Hello(0, 1, 100)), Frame(w::MsgType::kPing, 1)}));
  Write(t, "wrong_target", Cat({seed, Frame(w::MsgType::kHello, 0, Hello(0, 1, 0, "127.0.0.1:26001"))}));
  Write(t, "bad_version", Cat({seed, Frame(w::MsgType::kHello, 0, Hello(), {}, 0, 2)}));
  Write(t, "read_before_hello", Cat({seed, Frame(w::MsgType::kReadReq, 1, Segments({{kRegionA, 16}})), hello}));
  Write(t, "second_hello", Cat({seed, hello, hello}));
  // With a key: proved (the zeros become the right proof), forged, no auth
  // section, no AUTH, an AUTH unasked.
  const Bytes keyed = U32(0x80000001u);
  const Bytes hello_auth = Frame(w::MsgType::kHello, 0, Hello(0, 1, 0, kTarget, true));
  const Bytes read = Frame(w::MsgType::kReadReq, 2, Segments({{kRegionA, 16}}));
  Write(t, "auth", Cat({keyed, hello_auth, Frame(w::MsgType::kAuth, 1, AuthBody()), read}));
  Write(t, "auth_forged", Cat({keyed, hello_auth, Frame(w::MsgType::kAuth, 1, AuthBody(0x4d)), read}));
  Write(t, "auth_no_section", Cat({keyed, hello, Frame(w::MsgType::kAuth, 1, AuthBody()), read}));
  Write(t, "auth_skipped", Cat({keyed, hello_auth, read}));
  Write(t, "auth_unasked", Cat({seed, hello_auth, Frame(w::MsgType::kAuth, 1, AuthBody()), read}));
}

// handshake_initiator: a byte (1: the initiator has a key), then what the
// target sends, frame by frame (see the target's rules there): the
// HELLO_ACK (or an AUTH_CHALLENGE first), then a reply per request (req_id
// 0: the request's), REVOKEs when their turn comes.
void HandshakeInitiator() {
  const char *t = "handshake_initiator";
  const Bytes plain = {0}, keyed = {1};
  const auto two = Page(7, 2, 0, {Entry(0x1000, 4096), Entry(0x9000, 64, 0, {{kShm, U32(5)}})});
  const Bytes ack = Frame(w::MsgType::kHelloAck, 0, AckBody(two));
  const Bytes notify_ack = Frame(w::MsgType::kNotifyAck, 0);
  Write(t, "small_table", Cat({plain, ack, notify_ack, Frame(w::MsgType::kRegionsResp, 0, PageBody(two))}));
  Write(t, "paged_table",
        Cat({plain, Frame(w::MsgType::kHelloAck, 0, AckBody(Page(3, 3, 0, {Entry(0x1000, 16)}))),
             Frame(w::MsgType::kRegionsResp, 0, PageBody(Page(3, 3, 1, {Entry(0x2000, 16), Entry(0x3000, 16, 1)})))}));
  Write(t, "table_changed",
        Cat({plain, Frame(w::MsgType::kHelloAck, 0, AckBody(Page(1, 2, 0, {Entry(0x1000, 16)}))),
             Frame(w::MsgType::kRegionsResp, 0, PageBody(Page(2, 2, 1, {Entry(0x2000, 16)}))),
             Frame(w::MsgType::kRegionsResp, 0, PageBody(Page(2, 1, 0, {Entry(0x2000, 16)})))}));
  Write(t, "revoke",
        Cat({plain, ack, Frame(w::MsgType::kRevoke, 7, RevokeBody(0x1000, 4096)), notify_ack,
             Frame(w::MsgType::kRevoke, 8, RevokeBody(0x9000, 64)),
             Frame(w::MsgType::kRegionsResp, 0, PageBody(Page(8, 1, 0, {Entry(0x9000, 64)})))}));
  // A page refused with a status of the target's choice (it once made Open return it).
  Write(t, "page_refused",
        Cat({plain, Frame(w::MsgType::kHelloAck, 0, AckBody(Page(3, 2, 0, {Entry(0x1000, 16)}))),
             Frame(w::MsgType::kRegionsResp, 0, {}, {}, hixl::NOTIFY_FAILED)}));
  Write(t, "notify_refused", Cat({plain, ack, Frame(w::MsgType::kNotifyAck, 0, {}, {}, hixl::NOTIFY_FAILED)}));
  Write(t, "refused",
        Cat({plain, Frame(w::MsgType::kHelloAck, 0, AckBody(w::RegionPage(), "not this engine"), {}, hixl::FAILED)}));
  Write(t, "bad_version", Cat({plain, Frame(w::MsgType::kHelloAck, 0, AckBody(w::RegionPage()), {}, hixl::FAILED, 2)}));
  Write(t, "wrong_reply", Cat({plain, ack, Frame(w::MsgType::kPong, 0)}));
  // With a key: the target proves itself (the zeros become its right
  // proof), then accepts ours; a forged proof; no challenge at all; and a
  // challenge to an initiator without a key.
  const Bytes challenge = Frame(w::MsgType::kAuthChallenge, 0, ChallengeBody());
  Write(t, "auth", Cat({keyed, challenge, ack, notify_ack, Frame(w::MsgType::kRegionsResp, 0, PageBody(two))}));
  Write(t, "auth_forged", Cat({keyed, Frame(w::MsgType::kAuthChallenge, 0, ChallengeBody(0x4d)), ack}));
  Write(t, "auth_not_challenged", Cat({keyed, ack, notify_ack}));
  Write(t, "auth_refused",
        Cat({keyed, challenge, Frame(w::MsgType::kHelloAck, 0, AckBody(w::RegionPage(), "bad proof"), {}, hixl::FAILED)}));
  Write(t, "challenged_without_key", Cat({plain, challenge, ack}));
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (writes DIR/<target>/<seed>)\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  WireMessages();
  HandshakeTarget();
  HandshakeInitiator();
  return g_failed == 0 ? 0 : 1;
}
