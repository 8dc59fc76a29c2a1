// messages.h: bodies of the frames in frame.h, with decoders that check every
// field. Decoders return false on anything malformed; callers close the stream.
//
// Extensible by rule (protocol.md): HELLO and HELLO_ACK are sections, region
// entries are length-prefixed and end in sections, and the fixed-layout
// bodies (REVOKE, USING, REGIONS_REQ, NOTIFY) may grow at their end: a
// decoder reads what it knows and ignores what follows. Only segment lists,
// the hot path, have an exact size.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hixl::wire {

// Who runs an engine: two engines with equal boot_id and pid_ns share a kernel
// and a PID namespace, so one may reach the other's memory by pid (with the
// pid a transport offers in its own section: see transport/shm).
struct HostIdentity {
  std::string boot_id;  // /proc/sys/kernel/random/boot_id
  uint64_t pid_ns = 0;  // inode of /proc/self/ns/pid
  uint32_t uid = 0;
};

// A region's address range: what REVOKE names, and what lookups compare.
struct RegionInfo {
  uint64_t addr = 0;
  uint64_t len = 0;
};

// Per-transport opaque bytes (a transport's part of a handshake, or of a
// region-table entry: a remote key, say), by the transport's wire id.
struct Section {
  uint16_t id = 0;
  std::vector<uint8_t> bytes;
};
using Sections = std::vector<Section>;
// The bytes of section `id`, or nullptr.
const std::vector<uint8_t> *FindSection(const Sections &sections, uint16_t id);

// Memory kinds on the wire (not MemType's values, which are HIXL's).
enum class MemKind : uint8_t { kHost = 0, kDevice = 1 };
constexpr uint8_t kMaxMemKind = 1;

// One entry of a region table: the range, its memory kind, and what
// transports attach to it.
struct RegionEntry {
  RegionInfo range;
  MemKind kind = MemKind::kHost;
  Sections sections;
};

// A page of a target's region table: entries [first, first + size) of
// `total`, all from the table as of `generation` (which changes whenever the
// target registers or deregisters memory). A table larger than one page is
// fetched page by page (REGIONS_REQ names the first entry it wants); pages of
// different generations do not make a table.
struct RegionPage {
  uint64_t generation = 0;
  uint32_t total = 0;
  uint32_t first = 0;
  // How many entries the page covers (decoded: entries of memory kinds this
  // build does not know are skipped, so `entries` may hold fewer).
  uint32_t count = 0;
  std::vector<RegionEntry> entries;
};
// Entries go into a page until it holds this many bytes (one entry at least).
constexpr size_t kMaxRegionPageBytes = 1u << 20;
// How many bytes `e` takes in a page.
size_t RegionEntryBytes(const RegionEntry &e);

// Peer authentication (auth/authenticator.h): nonces and HMAC-SHA256 proofs
// are 32 bytes each.
constexpr size_t kAuthBytes = 32;
using AuthBytes = std::array<uint8_t, kAuthBytes>;

struct Hello {
  std::string initiator;  // the initiator's local_engine
  std::string target;     // the address it dialed
  uint64_t link_nonce = 0;
  uint16_t stream_index = 0;  // 0: the link's control stream
  uint16_t stream_count = 1;
  uint32_t heartbeat_ms = 0;  // the initiator pings at least this often; 0: never
  HostIdentity host;
  Sections offers;  // what each of the initiator's transports offers
  // The auth section: an initiator with a key sends its fresh nonce_i.
  bool has_auth = false;
  AuthBytes auth_nonce{};
};

struct HelloAck {
  std::string target;   // the target's local_engine
  std::string reason;   // why it refused (header status != 0)
  HostIdentity host;
  RegionPage regions;   // the first page of its region table
  Sections answers;     // each transport's answer to the offers
};

// AUTH_CHALLENGE's body (target -> initiator, answering a HELLO with an
// auth section): the target's fresh nonce and its proof.
struct AuthChallenge {
  AuthBytes nonce_t{};
  AuthBytes mac_t{};
};

struct Segment {
  uint64_t addr = 0;
  uint64_t len = 0;
};

struct Notify {
  std::string name;
  std::string msg;
};

void EncodeHello(const Hello &m, std::vector<uint8_t> *out);
bool DecodeHello(const uint8_t *data, size_t size, Hello *m);
void EncodeHelloAck(const HelloAck &m, std::vector<uint8_t> *out);
bool DecodeHelloAck(const uint8_t *data, size_t size, HelloAck *m);

// AUTH_CHALLENGE: nonce_t, mac_t; AUTH: mac_i. Fixed layouts that may grow
// at their end (a decoder ignores what follows).
void EncodeAuthChallenge(const AuthChallenge &m, std::vector<uint8_t> *out);
bool DecodeAuthChallenge(const uint8_t *data, size_t size, AuthChallenge *m);
void EncodeAuth(const AuthBytes &mac_i, std::vector<uint8_t> *out);
bool DecodeAuth(const uint8_t *data, size_t size, AuthBytes *mac_i);

// REGIONS_RESP's body.
void EncodeRegionPage(const RegionPage &page, std::vector<uint8_t> *out);
bool DecodeRegionPage(const uint8_t *data, size_t size, RegionPage *page);
// REGIONS_REQ's body: the first entry wanted.
void EncodeRegionsReq(uint32_t first, std::vector<uint8_t> *out);
bool DecodeRegionsReq(const uint8_t *data, size_t size, uint32_t *first);

// Body of READ/WRITE requests: u32 count, then count x (u64 addr, u64 len).
constexpr size_t kSegmentBytes = 16;
inline size_t SegmentsBodySize(size_t count) { return 4 + kSegmentBytes * count; }
void EncodeSegments(const Segment *segs, size_t count, std::vector<uint8_t> *out);
// Writes a segment list straight into a body, one segment at a time (the
// planner's hot loop): Add, then Finish to fill in the count.
class SegmentWriter {
 public:
  // `expect`: how many segments there will probably be (room is made once).
  explicit SegmentWriter(std::vector<uint8_t> *out, size_t expect = 0) : out_(out), room_(expect) {
    out_->resize(SegmentsBodySize(room_));
  }
  void Add(uint64_t addr, uint64_t len) {
    if (count_ == room_) Grow();
    uint8_t *p = out_->data() + 4 + kSegmentBytes * count_;
    PutLe64(p, addr);
    PutLe64(p + 8, len);
    ++count_;
  }
  size_t count() const { return count_; }
  // Trims the body to the segments added and writes their count.
  void Finish();

 private:
  static void PutLe64(uint8_t *p, uint64_t v) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(p, &v, 8);
    } else {
      for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
    }
  }
  void Grow();

  std::vector<uint8_t> *out_;
  size_t room_;
  size_t count_ = 0;
};
// Checks: 1..kMaxSegmentsPerFrame segments, exact size, every len > 0, no
// address range wraps, total fits in kMaxPayload. `total` gets the byte sum.
bool DecodeSegments(const uint8_t *data, size_t size, std::vector<Segment> *segs, uint64_t *total);

// Body of REVOKE: the region, u64 addr and u64 len.
void EncodeRevoke(const RegionInfo &region, std::vector<uint8_t> *out);
bool DecodeRevoke(const uint8_t *data, size_t size, RegionInfo *region);

// Body of USING: the wire id of the transport the initiator chose.
void EncodeUsing(uint16_t transport, std::vector<uint8_t> *out);
bool DecodeUsing(const uint8_t *data, size_t size, uint16_t *transport);

void EncodeNotify(const Notify &m, std::vector<uint8_t> *out);
bool DecodeNotify(const uint8_t *data, size_t size, Notify *m);

}  // namespace hixl::wire
