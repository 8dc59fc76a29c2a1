#include "wire/messages.h"

#include <bit>
#include <cstring>

#include "wire/codec.h"
#include "wire/frame.h"

namespace hixl::wire {
namespace {

constexpr size_t kMaxBootId = 64;
constexpr size_t kMaxReason = 512;

// Names, reasons and host ids end up in our logs: a peer must not be able to
// forge log lines (newlines) or drive a terminal (escapes) through them.
bool Printable(const std::string &s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Section ids of HELLO and HELLO_ACK. Ids below kTransportSection are the
// protocol's own fields; kTransportSection + a transport's wire id holds that
// transport's part.
enum Field : uint16_t {
  kInitiatorName = 1,
  kTargetName = 2,
  kLinkNonce = 3,
  kStream = 4,     // u16 index, u16 count
  kHeartbeat = 5,  // u32 ms
  kHost = 6,       // boot_id, u64 pid_ns, u32 uid
  kReason = 7,
  kRegionPage = 8,
  kAuth = 9,       // HELLO: nonce_i (32 bytes), then room for more
};
constexpr uint16_t kTransportSection = 0x8000;

// Section ids below kTransportSection seen in one list: one twice is
// malformed (protocol.md), a newer peer's (32..) too. A bit each; the bits
// for newer ids are made only when one comes (a peer could send thousands:
// no list to search).
class SeenIds {
 public:
  // False when `id` (below kTransportSection) was seen before: said twice.
  bool First(uint16_t id) {
    if (id < 32) {
      if (own_ & (1u << id)) return false;
      own_ |= 1u << id;
      return true;
    }
    if (newer_.empty()) newer_.assign(kTransportSection / 64, 0);
    uint64_t &word = newer_[id / 64];
    const uint64_t bit = 1ull << (id % 64);
    if (word & bit) return false;
    word |= bit;
    return true;
  }
  // Bits of the protocol's own fields (ids below 32) seen.
  uint32_t own() const { return own_; }

 private:
  uint32_t own_ = 0;
  std::vector<uint64_t> newer_;  // ids 32.., allocated on the first
};

void EncodeHost(const HostIdentity &h, Writer *w) {
  w->Str(h.boot_id);
  w->U64(h.pid_ns);
  w->U32(h.uid);
}

bool DecodeHost(Reader *r, HostIdentity *h) {
  h->boot_id = r->Str(kMaxBootId);
  h->pid_ns = r->U64();
  h->uid = r->U32();
  return r->ok() && Printable(h->boot_id);
}

void EncodeSections(uint16_t base, const Sections &sections, Writer *w) {
  for (const Section &s : sections) w->Section(static_cast<uint16_t>(base + s.id), [&](Writer &out) { out.Bytes(s.bytes); });
}

// Adds one section to `out`; false if its id is there already (a peer must
// not say two things at once).
bool AddSection(uint16_t id, Reader body, Sections *out) {
  if (FindSection(*out, id) != nullptr) return false;
  Section s;
  s.id = id;
  const size_t n = body.remaining();
  const uint8_t *p = body.Take(n);
  if (n > 0) s.bytes.assign(p, p + n);
  out->push_back(std::move(s));
  return true;
}

// 32 bytes of a nonce or proof; false if fewer are left.
bool TakeAuthBytes(Reader *r, AuthBytes *out) {
  const uint8_t *p = r->Take(out->size());
  if (!r->ok() || p == nullptr) return false;
  std::memcpy(out->data(), p, out->size());
  return true;
}

void EncodeEntry(const RegionEntry &e, Writer *w) {
  const size_t at = w->Reserve32();
  w->U64(e.range.addr);
  w->U64(e.range.len);
  w->U8(static_cast<uint8_t>(e.kind));
  EncodeSections(0, e.sections, w);
  w->Patch32(at, static_cast<uint32_t>(w->size() - at - 4));
}

// One entry; *known is false for a memory kind this build does not know
// (the entry is then skipped: nothing of ours can move such memory).
bool DecodeEntry(Reader *r, RegionEntry *e, bool *known) {
  const uint32_t n = r->U32();
  Reader body = r->Sub(n);
  e->range.addr = body.U64();
  e->range.len = body.U64();
  const uint8_t kind = body.U8();
  if (!body.ok() || e->range.len == 0 || e->range.addr + e->range.len < e->range.addr) return false;
  *known = kind <= kMaxMemKind;
  e->kind = static_cast<MemKind>(kind);
  e->sections.clear();
  uint16_t id;
  Reader section(nullptr, 0);
  while (body.NextSection(&id, &section)) {
    if (!AddSection(id, section, &e->sections)) return false;
  }
  return body.at_end();
}

void EncodePage(const RegionPage &page, Writer *w) {
  w->U64(page.generation);
  w->U32(page.total);
  w->U32(page.first);
  w->U32(static_cast<uint32_t>(page.entries.size()));
  for (const auto &e : page.entries) EncodeEntry(e, w);
}

bool DecodePage(Reader *r, RegionPage *page) {
  page->generation = r->U64();
  page->total = r->U32();
  page->first = r->U32();
  const uint32_t count = r->U32();
  page->count = count;
  if (!r->ok() || page->total > kMaxRegions || page->first > page->total || count > page->total - page->first ||
      r->remaining() / 21 < count) {  // 21: the smallest entry
    return false;
  }
  page->entries.clear();
  page->entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    RegionEntry e;
    bool known = false;
    if (!DecodeEntry(r, &e, &known)) return false;
    if (known) page->entries.push_back(std::move(e));
  }
  return r->ok();
}

}  // namespace

const std::vector<uint8_t> *FindSection(const Sections &sections, uint16_t id) {
  for (const Section &s : sections) {
    if (s.id == id) return &s.bytes;
  }
  return nullptr;
}

size_t RegionEntryBytes(const RegionEntry &e) {
  size_t n = 4 + 8 + 8 + 1;
  for (const Section &s : e.sections) n += 6 + s.bytes.size();
  return n;
}

void EncodeHello(const Hello &m, std::vector<uint8_t> *out) {
  Writer w(out);
  w.Section(kInitiatorName, [&](Writer &f) { f.Str(m.initiator); });
  w.Section(kTargetName, [&](Writer &f) { f.Str(m.target); });
  w.Section(kLinkNonce, [&](Writer &f) { f.U64(m.link_nonce); });
  w.Section(kStream, [&](Writer &f) {
    f.U16(m.stream_index);
    f.U16(m.stream_count);
  });
  if (m.heartbeat_ms != 0) w.Section(kHeartbeat, [&](Writer &f) { f.U32(m.heartbeat_ms); });
  w.Section(kHost, [&](Writer &f) { EncodeHost(m.host, &f); });
  if (m.has_auth) w.Section(kAuth, [&](Writer &f) { f.Bytes(m.auth_nonce.data(), m.auth_nonce.size()); });
  EncodeSections(kTransportSection, m.offers, &w);
}

bool DecodeHello(const uint8_t *data, size_t size, Hello *m) {
  Reader r(data, size);
  uint16_t id;
  Reader f(nullptr, 0);
  SeenIds seen;
  m->offers.clear();
  m->has_auth = false;
  while (r.NextSection(&id, &f)) {
    if (id >= kTransportSection) {
      if (!AddSection(static_cast<uint16_t>(id - kTransportSection), f, &m->offers)) return false;
      continue;
    }
    if (!seen.First(id)) return false;  // said twice
    switch (id) {
      case kInitiatorName: m->initiator = f.Str(kMaxEngineName); break;
      case kTargetName: m->target = f.Str(kMaxEngineName); break;
      case kLinkNonce: m->link_nonce = f.U64(); break;
      case kStream:
        m->stream_index = f.U16();
        m->stream_count = f.U16();
        break;
      case kHeartbeat: m->heartbeat_ms = f.U32(); break;
      case kHost:
        if (!DecodeHost(&f, &m->host)) return false;
        break;
      case kAuth:
        m->has_auth = TakeAuthBytes(&f, &m->auth_nonce);
        if (!m->has_auth) return false;
        break;  // (what follows the nonce is a newer peer's)
      default: continue;  // a field of a newer peer
    }
    if (!f.ok()) return false;
  }
  constexpr uint32_t kRequired =
      (1u << kInitiatorName) | (1u << kTargetName) | (1u << kLinkNonce) | (1u << kStream) | (1u << kHost);
  if ((seen.own() & (1u << kHeartbeat)) == 0) m->heartbeat_ms = 0;
  return r.at_end() && (seen.own() & kRequired) == kRequired && m->stream_count > 0 &&
         m->stream_index < m->stream_count && Printable(m->initiator) && Printable(m->target);
}

void EncodeHelloAck(const HelloAck &m, std::vector<uint8_t> *out) {
  Writer w(out);
  w.Section(kTargetName, [&](Writer &f) { f.Str(m.target); });
  if (!m.reason.empty()) w.Section(kReason, [&](Writer &f) { f.Str(m.reason); });
  w.Section(kHost, [&](Writer &f) { EncodeHost(m.host, &f); });
  w.Section(kRegionPage, [&](Writer &f) { EncodePage(m.regions, &f); });
  EncodeSections(kTransportSection, m.answers, &w);
}

bool DecodeHelloAck(const uint8_t *data, size_t size, HelloAck *m) {
  Reader r(data, size);
  uint16_t id;
  Reader f(nullptr, 0);
  SeenIds seen;
  // Optional fields absent from the input must not keep what an earlier
  // message put there (an old refusal's reason, say).
  *m = HelloAck();
  while (r.NextSection(&id, &f)) {
    if (id >= kTransportSection) {
      if (!AddSection(static_cast<uint16_t>(id - kTransportSection), f, &m->answers)) return false;
      continue;
    }
    if (!seen.First(id)) return false;  // said twice
    switch (id) {
      case kTargetName: m->target = f.Str(kMaxEngineName); break;
      case kReason: m->reason = f.Str(kMaxReason); break;
      case kHost:
        if (!DecodeHost(&f, &m->host)) return false;
        break;
      case kRegionPage:
        if (!DecodePage(&f, &m->regions)) return false;
        break;
      default: continue;
    }
    if (!f.ok()) return false;
  }
  return r.at_end() && (seen.own() & (1u << kTargetName)) != 0 && Printable(m->target) && Printable(m->reason);
}

void EncodeAuthChallenge(const AuthChallenge &m, std::vector<uint8_t> *out) {
  Writer w(out);
  w.Bytes(m.nonce_t.data(), m.nonce_t.size());
  w.Bytes(m.mac_t.data(), m.mac_t.size());
}

bool DecodeAuthChallenge(const uint8_t *data, size_t size, AuthChallenge *m) {
  Reader r(data, size);
  return TakeAuthBytes(&r, &m->nonce_t) && TakeAuthBytes(&r, &m->mac_t);
}

void EncodeAuth(const AuthBytes &mac_i, std::vector<uint8_t> *out) {
  Writer w(out);
  w.Bytes(mac_i.data(), mac_i.size());
}

bool DecodeAuth(const uint8_t *data, size_t size, AuthBytes *mac_i) {
  Reader r(data, size);
  return TakeAuthBytes(&r, mac_i);
}

void EncodeRegionPage(const RegionPage &page, std::vector<uint8_t> *out) {
  Writer w(out);
  EncodePage(page, &w);
}

bool DecodeRegionPage(const uint8_t *data, size_t size, RegionPage *page) {
  Reader r(data, size);
  return DecodePage(&r, page);  // (what follows the entries is a newer peer's)
}

void EncodeRegionsReq(uint32_t first, std::vector<uint8_t> *out) {
  Writer w(out);
  w.U32(first);
}

bool DecodeRegionsReq(const uint8_t *data, size_t size, uint32_t *first) {
  Reader r(data, size);
  *first = r.U32();
  return r.ok();
}

// Segment lists are the one message that can be long (65536 entries): they
// are written and read with memcpy on little-endian hosts, and byte by byte
// elsewhere.
void EncodeSegments(const Segment *segs, size_t count, std::vector<uint8_t> *out) {
  size_t at = out->size();
  out->resize(at + SegmentsBodySize(count));
  uint8_t *p = out->data() + at;
  auto count32 = static_cast<uint32_t>(count);
  if constexpr (std::endian::native == std::endian::little) {
    static_assert(sizeof(Segment) == kSegmentBytes);
    std::memcpy(p, &count32, 4);
    if (count > 0) std::memcpy(p + 4, segs, count * kSegmentBytes);
  } else {
    std::vector<uint8_t> tmp;
    Writer w(&tmp);
    w.U32(count32);
    for (size_t i = 0; i < count; ++i) {
      w.U64(segs[i].addr);
      w.U64(segs[i].len);
    }
    std::memcpy(p, tmp.data(), tmp.size());
  }
}

void SegmentWriter::Grow() {
  room_ = room_ == 0 ? 64 : room_ * 2;
  out_->resize(SegmentsBodySize(room_));
}

void SegmentWriter::Finish() {
  out_->resize(SegmentsBodySize(count_));
  auto n = static_cast<uint32_t>(count_);
  for (int i = 0; i < 4; ++i) (*out_)[i] = static_cast<uint8_t>(n >> (8 * i));
}

bool DecodeSegments(const uint8_t *data, size_t size, std::vector<Segment> *segs, uint64_t *total) {
  Reader r(data, size);
  uint32_t n = r.U32();
  if (!r.ok() || n == 0 || n > kMaxSegmentsPerFrame || size != SegmentsBodySize(n)) return false;
  segs->resize(n);
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(segs->data(), data + 4, static_cast<size_t>(n) * kSegmentBytes);
  } else {
    for (uint32_t i = 0; i < n; ++i) {
      (*segs)[i].addr = r.U64();
      (*segs)[i].len = r.U64();
    }
  }
  uint64_t sum = 0;
  for (const Segment &s : *segs) {
    if (s.len == 0 || s.len > kMaxPayload || s.addr + s.len < s.addr) return false;
    sum += s.len;  // cannot wrap: each len <= 2^30 and n <= 2^16
    if (sum > kMaxPayload) return false;
  }
  *total = sum;
  return true;
}

void EncodeRevoke(const RegionInfo &region, std::vector<uint8_t> *out) {
  Writer w(out);
  w.U64(region.addr);
  w.U64(region.len);
}

bool DecodeRevoke(const uint8_t *data, size_t size, RegionInfo *region) {
  Reader r(data, size);
  region->addr = r.U64();
  region->len = r.U64();
  return r.ok();
}

void EncodeUsing(uint16_t transport, std::vector<uint8_t> *out) {
  Writer w(out);
  w.U16(transport);
}

bool DecodeUsing(const uint8_t *data, size_t size, uint16_t *transport) {
  Reader r(data, size);
  *transport = r.U16();
  return r.ok();
}

void EncodeNotify(const Notify &m, std::vector<uint8_t> *out) {
  Writer w(out);
  w.Str(m.name);
  w.Str(m.msg);
}

bool DecodeNotify(const uint8_t *data, size_t size, Notify *m) {
  Reader r(data, size);
  m->name = r.Str(kMaxNotifyField);
  m->msg = r.Str(kMaxNotifyField);
  return r.ok();
}

}  // namespace hixl::wire
