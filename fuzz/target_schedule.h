// target_schedule.h: how handshake_target_fuzzer paces its input, from the
// input's 4-byte seed: the size of each piece it sends, and after which
// pieces the engine starts a revocation (of which region). Shared with
// make_seeds.cc, which picks seeds that revoke where a seed needs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace hixl_fuzz {

class TargetSchedule {
 public:
  explicit TargetSchedule(uint32_t seed) : rng_(seed) {}
  // The next piece's size (before it is cut to what is left of `size`).
  size_t Piece(size_t size) {
    switch (rng_() % 4) {
      case 0: return 1 + rng_() % 8;
      case 1: return 1 + rng_() % 64;
      case 2: return 1 + rng_() % 2048;
      default: return size;
    }
  }
  // After a piece: whether to revoke a region now, and which (0..2).
  bool Revoke(size_t *which) {
    if (rng_() % 8 != 0) return false;
    *which = rng_() % 3;
    return true;
  }

 private:
  std::minstd_rand rng_;
};

}  // namespace hixl_fuzz
