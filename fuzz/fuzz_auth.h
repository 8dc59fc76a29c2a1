// fuzz_auth.h: the key both handshake fuzzers give their side in an
// authenticated run, and how they stand in for the peer that holds it too.
//
// A fuzzer cannot guess an HMAC, so the peer's proof in its input is a
// placeholder (32 zero bytes) that the harness fills in with the right
// proof once it knows both nonces; any other bytes go out as they are (a
// forged proof).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "auth/authenticator.h"
#include "fuzz_check.h"
#include "wire/messages.h"

namespace hixl_fuzz {

inline const hixl::auth::Authenticator &FuzzKey() {
  static const hixl::auth::Authenticator *key = [] {
    std::string why;
    const hixl::auth::Crypto *crypto = hixl::auth::LoadCrypto(&why);
    if (crypto == nullptr) std::fprintf(stderr, "fuzz: %s\n", why.c_str());
    FUZZ_CHECK(crypto != nullptr);
    const std::string k = "fuzz-key-0123456789abcdef-0123456";
    return new hixl::auth::Authenticator(std::vector<uint8_t>(k.begin(), k.end()), *crypto);
  }();  // never destroyed: runs use it until the process exits
  return *key;
}

// Whether `p` holds the placeholder for a proof the harness fills in.
inline bool IsPlaceholder(const uint8_t *p) {
  return std::all_of(p, p + hixl::wire::kAuthBytes, [](uint8_t b) { return b == 0; });
}

}  // namespace hixl_fuzz
