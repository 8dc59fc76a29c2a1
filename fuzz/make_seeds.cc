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

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hixl/hixl_types.h"
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

Bytes Hello(uint16_t index = 0, uint16_t count = 1, uint32_t heartbeat_ms = 0, const std::string &target = kTarget) {
  w::Hello m = MakeHello(index, count);
  m.heartbeat_ms = heartbeat_ms;
  m.target = target;
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
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (writes DIR/<target>/<seed>)\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  WireMessages();
  return g_failed == 0 ? 0 : 1;
}
