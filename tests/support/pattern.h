// pattern.h: deterministic byte patterns and hashes shared by the tests and
// the peer process, so that each side can check the other's memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// The peer process reads and fills buffers that its engine's I/O threads
// write for remote peers; the ordering is real but runs through another
// process (an ack over TCP, then a command over a pipe), which TSan cannot
// see. These two functions are left uninstrumented rather than suppressed:
// a suppression still pays for a report per byte.
#define HIXL_TEST_NO_TSAN __attribute__((no_sanitize("thread")))

namespace hixl_test {

// The byte at `offset` of a buffer filled with `seed`.
inline uint8_t PatternByte(uint64_t seed, uint64_t offset) {
  uint64_t x = (offset + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

HIXL_TEST_NO_TSAN inline void FillPattern(void *buf, size_t len, uint64_t seed, uint64_t base_offset = 0) {
  auto *p = static_cast<uint8_t *>(buf);
  for (size_t i = 0; i < len; ++i) p[i] = PatternByte(seed, base_offset + i);
}

// A buffer filled with `seed`.
inline std::vector<uint8_t> PatternBytes(size_t len, uint64_t seed) {
  std::vector<uint8_t> v(len);
  FillPattern(v.data(), len, seed);
  return v;
}

// FNV-1a, 64 bit.
HIXL_TEST_NO_TSAN inline uint64_t Hash(const void *buf, size_t len) {
  auto *p = static_cast<const uint8_t *>(buf);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// How the peer prints a notify field (NOTIFIES): lowercase hex, "-" when
// empty, so that any bytes fit on one line.
inline std::string HexField(const char *p, size_t n) {
  static const char d[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(d[static_cast<uint8_t>(p[i]) >> 4]);
    out.push_back(d[static_cast<uint8_t>(p[i]) & 15]);
  }
  return out.empty() ? "-" : out;
}
inline std::string HexField(const std::string &s) { return HexField(s.data(), s.size()); }
// The bytes HexField wrote ("-" gives none); stops at the first non-hex pair.
inline std::vector<uint8_t> FromHex(const std::string &hex) {
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) break;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return out;
}

}  // namespace hixl_test
