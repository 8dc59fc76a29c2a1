// wire_messages_fuzzer.cc: every message decoder of src/wire/messages.h on
// bytes from a hostile peer.
//
// Input: the first byte picks the decoder (HELLO, HELLO_ACK, region page,
// REGIONS_REQ, segment list, REVOKE, USING, NOTIFY, AUTH_CHALLENGE, AUTH),
// the rest is its body.
// Beyond "no crash":
// - what a decoder accepts is inside docs/protocol.md's limits (names,
//   counts, ranges, printable text), and re-encodes to bytes that decode to
//   the same message and re-encode to the same bytes again (canonical after
//   one round); the exact-size segment list and the fixed bodies re-encode
//   to the input itself (their prefix: fixed bodies may grow at their end);
// - a section list it accepts is whole and names no id twice;
// - it accepts exactly what a flat model of the rules accepts, where the
//   rules are short enough to model (segments, REVOKE, USING, REGIONS_REQ,
//   NOTIFY, AUTH_CHALLENGE, AUTH);
// - its result depends on the input alone: decoding into an output that
//   holds an earlier message gives what decoding into a fresh one gives;
// - a refused segment list leaves `total` alone (what its header promises;
//   the others promise only `false`, and every caller drops the output).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "wire/codec.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace {

namespace w = hixl::wire;

bool Printable(const std::string &s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

bool Eq(const w::Sections &a, const w::Sections &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].bytes != b[i].bytes) return false;
  }
  return true;
}

bool Eq(const w::HostIdentity &a, const w::HostIdentity &b) {
  return a.boot_id == b.boot_id && a.pid_ns == b.pid_ns && a.uid == b.uid;
}

bool Eq(const w::Hello &a, const w::Hello &b) {
  return a.initiator == b.initiator && a.target == b.target && a.link_nonce == b.link_nonce &&
         a.stream_index == b.stream_index && a.stream_count == b.stream_count && a.heartbeat_ms == b.heartbeat_ms &&
         Eq(a.host, b.host) && Eq(a.offers, b.offers) && a.has_auth == b.has_auth &&
         (!a.has_auth || a.auth_nonce == b.auth_nonce);
}

// `count` apart: a decoded page counts the entries it skipped (unknown
// memory kinds), its re-encoding only those it kept.
bool EqEntries(const w::RegionPage &a, const w::RegionPage &b) {
  if (a.generation != b.generation || a.total != b.total || a.first != b.first ||
      a.entries.size() != b.entries.size()) {
    return false;
  }
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const w::RegionEntry &x = a.entries[i], &y = b.entries[i];
    if (x.range.addr != y.range.addr || x.range.len != y.range.len || x.kind != y.kind ||
        !Eq(x.sections, y.sections)) {
      return false;
    }
  }
  return true;
}

bool Eq(const w::RegionPage &a, const w::RegionPage &b) { return a.count == b.count && EqEntries(a, b); }

bool Eq(const w::HelloAck &a, const w::HelloAck &b) {
  return a.target == b.target && a.reason == b.reason && Eq(a.host, b.host) && Eq(a.regions, b.regions) &&
         Eq(a.answers, b.answers);
}

// Section ids unique within one list.
bool UniqueIds(const w::Sections &s) {
  for (size_t i = 0; i < s.size(); ++i) {
    for (size_t j = i + 1; j < s.size(); ++j) {
      if (s[i].id == s[j].id) return false;
    }
  }
  return true;
}

// The model of a section list (protocol.md): whole sections to the end, no
// id twice. Returns whether `data` is one.
bool WellFormedSections(const uint8_t *data, size_t size) {
  w::Reader r(data, size);
  std::vector<uint16_t> seen;
  uint16_t id;
  w::Reader body(nullptr, 0);
  while (r.NextSection(&id, &body)) {
    for (uint16_t s : seen) {
      if (s == id) return false;
    }
    seen.push_back(id);
  }
  return r.at_end();
}

// An earlier message in the output: decoding must not let it show through.
w::Hello StaleHello() {
  w::Hello m;
  m.initiator = "stale-initiator";
  m.target = "10.0.0.1:1";
  m.link_nonce = 0x5151;
  m.stream_index = 3;
  m.stream_count = 7;
  m.heartbeat_ms = 999;
  m.host = {"stale-boot", 77, 88};
  m.offers.push_back({5, {1, 2, 3}});
  m.has_auth = true;
  m.auth_nonce.fill(0x5a);
  return m;
}

w::RegionPage StalePage() {
  w::RegionPage p;
  p.generation = 42;
  p.total = 9;
  p.first = 1;
  p.count = 1;
  p.entries.push_back({{0x1000, 0x10}, w::MemKind::kDevice, {{1, {9}}}});
  return p;
}

w::HelloAck StaleAck() {
  w::HelloAck a;
  a.target = "stale-target";
  a.reason = "stale reason";
  a.host = {"stale-boot", 77, 88};
  a.regions = StalePage();
  a.answers.push_back({2, {4, 5}});
  return a;
}

void CheckPage(const w::RegionPage &p, size_t bytes) {
  FUZZ_CHECK(p.total <= w::kMaxRegions);
  FUZZ_CHECK(p.first <= p.total && p.count <= p.total - p.first);
  FUZZ_CHECK(p.entries.size() <= p.count);
  size_t sum = 0;
  for (const w::RegionEntry &e : p.entries) {
    FUZZ_CHECK(e.range.len > 0 && e.range.addr + e.range.len >= e.range.addr);
    FUZZ_CHECK(static_cast<uint8_t>(e.kind) <= w::kMaxMemKind);
    FUZZ_CHECK(UniqueIds(e.sections));
    sum += w::RegionEntryBytes(e);
  }
  FUZZ_CHECK(sum <= bytes);  // every entry kept was all there, no byte read twice
}

void CheckHost(const w::HostIdentity &h) { FUZZ_CHECK(h.boot_id.size() <= 64 && Printable(h.boot_id)); }

void FuzzHello(const uint8_t *d, size_t n) {
  w::Hello m, stale = StaleHello();
  const bool ok = w::DecodeHello(d, n, &m);
  FUZZ_CHECK(w::DecodeHello(d, n, &stale) == ok);
  if (!ok) return;
  FUZZ_CHECK(Eq(m, stale));
  FUZZ_CHECK(WellFormedSections(d, n));
  FUZZ_CHECK(m.initiator.size() <= w::kMaxEngineName && Printable(m.initiator));
  FUZZ_CHECK(m.target.size() <= w::kMaxEngineName && Printable(m.target));
  FUZZ_CHECK(m.stream_count > 0 && m.stream_index < m.stream_count);
  CheckHost(m.host);
  FUZZ_CHECK(UniqueIds(m.offers));
  std::vector<uint8_t> once, twice;
  w::EncodeHello(m, &once);
  FUZZ_CHECK(once.size() <= n);  // known fields once each, unknown ones dropped
  w::Hello again;
  FUZZ_CHECK(w::DecodeHello(once.data(), once.size(), &again));
  FUZZ_CHECK(Eq(m, again));
  w::EncodeHello(again, &twice);
  FUZZ_CHECK(once == twice);
}

void FuzzHelloAck(const uint8_t *d, size_t n) {
  w::HelloAck m, stale = StaleAck();
  const bool ok = w::DecodeHelloAck(d, n, &m);
  FUZZ_CHECK(w::DecodeHelloAck(d, n, &stale) == ok);
  if (!ok) return;
  FUZZ_CHECK(Eq(m, stale));
  FUZZ_CHECK(WellFormedSections(d, n));
  FUZZ_CHECK(m.target.size() <= w::kMaxEngineName && Printable(m.target));
  FUZZ_CHECK(m.reason.size() <= 512 && Printable(m.reason));
  CheckHost(m.host);
  CheckPage(m.regions, n);
  FUZZ_CHECK(UniqueIds(m.answers));
  std::vector<uint8_t> once, twice;
  w::EncodeHelloAck(m, &once);
  w::HelloAck again;
  FUZZ_CHECK(w::DecodeHelloAck(once.data(), once.size(), &again));
  FUZZ_CHECK(again.regions.count == m.regions.entries.size());
  again.regions.count = m.regions.count;
  FUZZ_CHECK(Eq(m, again));
  again.regions.count = static_cast<uint32_t>(again.regions.entries.size());
  w::EncodeHelloAck(again, &twice);
  FUZZ_CHECK(once == twice);
}

void FuzzRegionPage(const uint8_t *d, size_t n) {
  w::RegionPage p, stale = StalePage();
  const bool ok = w::DecodeRegionPage(d, n, &p);
  FUZZ_CHECK(w::DecodeRegionPage(d, n, &stale) == ok);
  if (!ok) return;
  FUZZ_CHECK(Eq(p, stale));
  CheckPage(p, n);
  std::vector<uint8_t> once, twice;
  w::EncodeRegionPage(p, &once);
  w::RegionPage again;
  FUZZ_CHECK(w::DecodeRegionPage(once.data(), once.size(), &again));
  FUZZ_CHECK(again.count == p.entries.size() && EqEntries(p, again));
  w::EncodeRegionPage(again, &twice);
  FUZZ_CHECK(once == twice);
  // All entries kept (known kinds): the page is its input, less what a
  // newer peer may add after the entries.
  if (p.entries.size() == p.count) FUZZ_CHECK(once.size() <= n && std::memcmp(once.data(), d, once.size()) == 0);
}

void FuzzSegments(const uint8_t *d, size_t n) {
  // The model: u32 count in 1..65536, exactly that many, each len in
  // 1..kMaxPayload, no wrap, the sum at most kMaxPayload.
  bool model = n >= 4;
  uint32_t count = 0;
  uint64_t sum = 0;
  if (model) {
    std::memcpy(&count, d, 4);
    model = count >= 1 && count <= w::kMaxSegmentsPerFrame && n == 4 + 16ull * count;
  }
  for (uint32_t i = 0; model && i < count; ++i) {
    uint64_t addr, len;
    std::memcpy(&addr, d + 4 + 16 * i, 8);
    std::memcpy(&len, d + 12 + 16 * i, 8);
    sum += len;
    model = len > 0 && len <= w::kMaxPayload && addr + len >= addr && sum <= w::kMaxPayload;
  }
  std::vector<w::Segment> segs(3);
  uint64_t total = 0x7777;
  const bool ok = w::DecodeSegments(d, n, &segs, &total);
  FUZZ_CHECK(ok == model);
  if (!ok) {
    FUZZ_CHECK(total == 0x7777);
    return;
  }
  FUZZ_CHECK(segs.size() == count && total == sum);
  std::vector<uint8_t> once, by_writer;
  w::EncodeSegments(segs.data(), segs.size(), &once);
  FUZZ_CHECK(once.size() == n && std::memcmp(once.data(), d, n) == 0);
  w::SegmentWriter writer(&by_writer, segs.size() % 3);  // room too small, or none: it grows
  for (const w::Segment &s : segs) writer.Add(s.addr, s.len);
  writer.Finish();
  FUZZ_CHECK(writer.count() == segs.size() && by_writer == once);
}

// The fixed bodies: accepted when the model accepts (the known fields are
// all there: `need` bytes), and the known fields re-encode to the input's
// first bytes.
void CheckFixed(bool ok, bool model, size_t need, const std::vector<uint8_t> &encoded, const uint8_t *d, size_t n) {
  FUZZ_CHECK(ok == model);
  if (!ok) return;
  FUZZ_CHECK(need <= n);
  FUZZ_CHECK(encoded.size() == need && std::memcmp(encoded.data(), d, need) == 0);
}

// A fixed body of `need` bytes: decoded into a value that held `stale`.
template <class T, class Decode, class Encode>
void FuzzFixed(const uint8_t *d, size_t n, T stale, size_t need, Decode decode, Encode encode) {
  T v = stale;
  const bool ok = decode(d, n, &v);
  std::vector<uint8_t> out;
  if (ok) encode(v, &out);
  CheckFixed(ok, n >= need, need, out, d, n);
}

void FuzzRevoke(const uint8_t *d, size_t n) {
  FuzzFixed(d, n, w::RegionInfo{1, 2}, 16, w::DecodeRevoke, w::EncodeRevoke);
}
void FuzzUsing(const uint8_t *d, size_t n) { FuzzFixed<uint16_t>(d, n, 0xbeef, 2, w::DecodeUsing, w::EncodeUsing); }
void FuzzRegionsReq(const uint8_t *d, size_t n) {
  FuzzFixed<uint32_t>(d, n, 0xdead, 4, w::DecodeRegionsReq, w::EncodeRegionsReq);
}

void FuzzNotify(const uint8_t *d, size_t n) {
  // The model: two strings (u32 length + bytes) of at most 1024 bytes each.
  size_t need = 0;
  bool model = true;
  for (int i = 0; i < 2 && model; ++i) {
    uint32_t len = 0;
    model = n - need >= 4;
    if (model) std::memcpy(&len, d + need, 4);
    model = model && len <= w::kMaxNotifyField && n - need - 4 >= len;
    need += 4 + len;
  }
  w::Notify m{"stale", "stale"};
  const bool ok = w::DecodeNotify(d, n, &m);
  FUZZ_CHECK(ok == model);
  std::vector<uint8_t> out;
  if (ok) w::EncodeNotify(m, &out);
  CheckFixed(ok, model, need, out, d, n);
}

// AUTH_CHALLENGE (nonce_t, mac_t) and AUTH (mac_i): fixed bodies of 64 and
// 32 bytes; what follows is a newer peer's and is ignored.
void FuzzAuthChallenge(const uint8_t *d, size_t n) {
  w::AuthChallenge stale;
  stale.nonce_t.fill(0x11);
  stale.mac_t.fill(0x22);
  FuzzFixed(d, n, stale, 2 * w::kAuthBytes, w::DecodeAuthChallenge, w::EncodeAuthChallenge);
}

void FuzzAuth(const uint8_t *d, size_t n) {
  w::AuthBytes stale;
  stale.fill(0x33);
  FuzzFixed(d, n, stale, w::kAuthBytes, w::DecodeAuth, w::EncodeAuth);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const uint8_t *d = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 10) {
    case 0: FuzzHello(d, n); break;
    case 1: FuzzHelloAck(d, n); break;
    case 2: FuzzRegionPage(d, n); break;
    case 3: FuzzRegionsReq(d, n); break;
    case 4: FuzzSegments(d, n); break;
    case 5: FuzzRevoke(d, n); break;
    case 6: FuzzUsing(d, n); break;
    case 7: FuzzNotify(d, n); break;
    case 8: FuzzAuthChallenge(d, n); break;
    default: FuzzAuth(d, n); break;
  }
  return 0;
}
