// messages.h: bodies of the frames in frame.h, with decoders that check every
// field. Decoders return false on anything malformed; callers close the stream.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hixl::wire {

// Who runs an engine: two engines with equal boot_id and pid_ns share a kernel
// and a PID namespace, so one may reach the other's memory by pid.
struct HostIdentity {
  std::string boot_id;  // /proc/sys/kernel/random/boot_id
  uint64_t pid_ns = 0;  // inode of /proc/self/ns/pid
  uint32_t uid = 0;
  uint32_t pid = 0;
};

struct RegionInfo {
  uint64_t addr = 0;
  uint64_t len = 0;
};

struct Hello {
  std::string initiator;  // the initiator's local_engine
  std::string target;     // the address it dialed
  uint64_t link_nonce = 0;
  uint16_t stream_index = 0;
  uint16_t stream_count = 1;
  uint32_t heartbeat_ms = 0;  // the initiator pings at least this often; 0: never
  HostIdentity host;
};

struct HelloAck {
  std::string target;   // the target's local_engine
  std::string reason;   // why it refused (header status != 0)
  std::vector<RegionInfo> regions;
  HostIdentity host;
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

void EncodeRegions(const std::vector<RegionInfo> &regions, std::vector<uint8_t> *out);
bool DecodeRegions(const uint8_t *data, size_t size, std::vector<RegionInfo> *regions);

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

void EncodeNotify(const Notify &m, std::vector<uint8_t> *out);
bool DecodeNotify(const uint8_t *data, size_t size, Notify *m);

}  // namespace hixl::wire
