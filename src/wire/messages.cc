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

void EncodeHost(const HostIdentity &h, Writer *w) {
  w->Str(h.boot_id);
  w->U64(h.pid_ns);
  w->U32(h.uid);
  w->U32(h.pid);
}

void DecodeHost(Reader *r, HostIdentity *h) {
  h->boot_id = r->Str(kMaxBootId);
  h->pid_ns = r->U64();
  h->uid = r->U32();
  h->pid = r->U32();
}

// One region on the wire: addr, len (16 bytes). Region lists and REVOKE.
void EncodeRegion(const RegionInfo &r, Writer *w) {
  w->U64(r.addr);
  w->U64(r.len);
}

RegionInfo DecodeRegion(Reader *r) {
  RegionInfo info;
  info.addr = r->U64();
  info.len = r->U64();
  return info;
}

void EncodeRegionList(const std::vector<RegionInfo> &regions, Writer *w) {
  w->U32(static_cast<uint32_t>(regions.size()));
  for (const auto &r : regions) EncodeRegion(r, w);
}

bool DecodeRegionList(Reader *r, std::vector<RegionInfo> *regions) {
  uint32_t n = r->U32();
  if (!r->ok() || n > kMaxRegions || r->remaining() < static_cast<size_t>(n) * 16) return false;
  regions->clear();
  regions->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    RegionInfo info = DecodeRegion(r);
    if (info.len == 0 || info.addr + info.len < info.addr) return false;
    regions->push_back(info);
  }
  return r->ok();
}

}  // namespace

void EncodeHello(const Hello &m, std::vector<uint8_t> *out) {
  Writer w(out);
  w.Str(m.initiator);
  w.Str(m.target);
  w.U64(m.link_nonce);
  w.U16(m.stream_index);
  w.U16(m.stream_count);
  w.U32(m.heartbeat_ms);
  EncodeHost(m.host, &w);
}

bool DecodeHello(const uint8_t *data, size_t size, Hello *m) {
  Reader r(data, size);
  m->initiator = r.Str(kMaxEngineName);
  m->target = r.Str(kMaxEngineName);
  m->link_nonce = r.U64();
  m->stream_index = r.U16();
  m->stream_count = r.U16();
  m->heartbeat_ms = r.U32();
  DecodeHost(&r, &m->host);
  return r.Done() && m->stream_count > 0 && m->stream_index < m->stream_count && Printable(m->initiator) &&
         Printable(m->target) && Printable(m->host.boot_id);
}

void EncodeHelloAck(const HelloAck &m, std::vector<uint8_t> *out) {
  Writer w(out);
  w.Str(m.target);
  w.Str(m.reason);
  EncodeRegionList(m.regions, &w);
  EncodeHost(m.host, &w);
}

bool DecodeHelloAck(const uint8_t *data, size_t size, HelloAck *m) {
  Reader r(data, size);
  m->target = r.Str(kMaxEngineName);
  m->reason = r.Str(kMaxReason);
  if (!DecodeRegionList(&r, &m->regions)) return false;
  DecodeHost(&r, &m->host);
  return r.Done() && Printable(m->target) && Printable(m->reason) && Printable(m->host.boot_id);
}

void EncodeRegions(const std::vector<RegionInfo> &regions, std::vector<uint8_t> *out) {
  Writer w(out);
  EncodeRegionList(regions, &w);
}

bool DecodeRegions(const uint8_t *data, size_t size, std::vector<RegionInfo> *regions) {
  Reader r(data, size);
  return DecodeRegionList(&r, regions) && r.Done();
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
  EncodeRegion(region, &w);
}

bool DecodeRevoke(const uint8_t *data, size_t size, RegionInfo *region) {
  Reader r(data, size);
  *region = DecodeRegion(&r);
  return r.Done();
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
  return r.Done();
}

}  // namespace hixl::wire
