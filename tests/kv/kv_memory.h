// kv_memory.h: host memory for test caches, filled with pattern.h bytes, and
// digests of their blocks, shared by the tests and kv_test_peer so that each
// side can check the other's caches.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/pattern.h"

namespace hixl_test {

// The pattern seed of tensor t of a cache filled with `seed`.
inline uint64_t TensorSeed(uint64_t seed, size_t t) { return seed * 4096 + t; }

// num_tensors tensors of tensor_bytes each: each its own mapping, or
// (contiguous) back to back in one.
class HostTensors {
 public:
  HostTensors(size_t num_tensors, size_t tensor_bytes, bool contiguous) : bytes_(tensor_bytes) {
    if (contiguous) {
      void *p = mmap(nullptr, num_tensors * tensor_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      maps_.push_back({p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p), num_tensors * tensor_bytes});
      for (size_t t = 0; t < num_tensors && maps_[0].first != nullptr; ++t) {
        addrs_.push_back(reinterpret_cast<uint64_t>(maps_[0].first + t * tensor_bytes));
      }
    } else {
      for (size_t t = 0; t < num_tensors; ++t) {
        void *p = mmap(nullptr, tensor_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) break;
        maps_.push_back({static_cast<uint8_t *>(p), tensor_bytes});
        addrs_.push_back(reinterpret_cast<uint64_t>(p));
      }
    }
  }
  ~HostTensors() {
    for (auto &m : maps_) {
      if (m.first != nullptr) munmap(m.first, m.second);
    }
  }
  HostTensors(const HostTensors &) = delete;
  HostTensors &operator=(const HostTensors &) = delete;
  bool ok(size_t num_tensors) const { return addrs_.size() == num_tensors; }
  const std::vector<uint64_t> &addrs() const { return addrs_; }

 private:
  size_t bytes_;
  std::vector<std::pair<uint8_t *, size_t>> maps_;
  std::vector<uint64_t> addrs_;
};

inline void FillTensors(const std::vector<uint64_t> &addrs, size_t tensor_bytes, uint64_t seed) {
  for (size_t t = 0; t < addrs.size(); ++t) {
    FillPattern(reinterpret_cast<void *>(addrs[t]), tensor_bytes, TensorSeed(seed, t));
  }
}

// FNV-1a over units [u*unit, (u+1)*unit) of tensors [t0, t1), tensor by
// tensor, units in the order given.
HIXL_TEST_NO_TSAN inline uint64_t DigestUnits(const std::vector<uint64_t> &addrs, size_t t0, size_t t1, size_t unit,
                                              const std::vector<uint64_t> &units) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t t = t0; t < t1; ++t) {
    for (uint64_t u : units) {
      const auto *p = reinterpret_cast<const uint8_t *>(addrs[t] + u * unit);
      for (size_t i = 0; i < unit; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    }
  }
  return h;
}

// The digest DigestUnits gives for memory filled with `seed`: tensor t of
// the digest holds the pattern of tensor map_tensor(t) at unit map_unit(u).
template <typename TensorMap, typename UnitMap>
uint64_t ExpectedDigest(uint64_t seed, size_t t0, size_t t1, size_t unit, const std::vector<uint64_t> &units,
                        TensorMap map_tensor, UnitMap map_unit) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t t = t0; t < t1; ++t) {
    for (size_t k = 0; k < units.size(); ++k) {
      const uint64_t base = map_unit(k) * unit;
      const uint64_t tensor_seed = TensorSeed(seed, map_tensor(t));
      for (size_t i = 0; i < unit; ++i) h = (h ^ PatternByte(tensor_seed, base + i)) * 0x100000001b3ull;
    }
  }
  return h;
}

// True once any of the n bytes at p is not zero. The engine may be writing
// them meanwhile (a test watching a pull land): left out of TSan's view.
HIXL_TEST_NO_TSAN inline bool AnyNonZero(const void *p, size_t n) {
  const auto *b = static_cast<const volatile uint8_t *>(p);
  for (size_t i = 0; i < n; ++i) {
    if (b[i] != 0) return true;
  }
  return false;
}

inline std::string JoinIds(const std::vector<uint64_t> &ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s.empty() ? "-" : s;
}

inline std::vector<uint64_t> SplitIds(const std::string &s) {
  std::vector<uint64_t> out;
  if (s == "-") return out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stoull(s.substr(at, comma - at)));
    at = comma + 1;
  }
  return out;
}

}  // namespace hixl_test
