// authenticator.h: an engine's shared secret and the proofs made with it
// (docs/security.md, protocol.md "Authentication"). Each stream's handshake
// has two fresh 32-byte nonces, nonce_i (initiator, in HELLO) and nonce_t
// (target, in AUTH_CHALLENGE); each side proves it holds the key with
//   HMAC-SHA256(key, label || nonce_i || nonce_t || str(initiator) || str(target))
// label "hixl-auth-t" for the target's proof, "hixl-auth-i" for the
// initiator's (so that neither can be reflected as the other), str(s) = u32
// little-endian length + bytes (names of any length cannot run together),
// the names as the HELLO carries them (the initiator's local_engine, the
// address it dialed). Proofs are compared in constant time (CRYPTO_memcmp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "auth/libcrypto.h"
#include "hixl/hixl_types.h"

namespace hixl::auth {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;  // SHA-256
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

enum class Role { kInitiator, kTarget };

class Authenticator {
 public:
  // From a key file: PARAM_INVALID (the file: see key_file.h) or FAILED
  // (libcrypto cannot be loaded), with the reason in *why.
  static Status FromFile(const std::string &path, std::shared_ptr<const Authenticator> *out, std::string *why);
  // From key bytes (at least kMinKeyBytes) and a loaded libcrypto.
  Authenticator(std::vector<uint8_t> key, const Crypto &crypto);
  ~Authenticator();
  Authenticator(const Authenticator &) = delete;
  Authenticator &operator=(const Authenticator &) = delete;

  // A fresh nonce from libcrypto's CSPRNG; false (logged) if it fails.
  bool NewNonce(Nonce *out) const;
  // `role`'s proof for one stream's handshake (see the top of this file).
  Mac Prove(Role role, const Nonce &nonce_i, const Nonce &nonce_t, const std::string &initiator,
            const std::string &target) const;
  // Whether two proofs are equal, compared in constant time.
  bool Same(const Mac &a, const Mac &b) const { return crypto_.memcmp(a.data(), b.data(), a.size()) == 0; }
  // Whether `mac` is `role`'s proof, compared in constant time.
  bool Check(Role role, const Nonce &nonce_i, const Nonce &nonce_t, const std::string &initiator,
             const std::string &target, const Mac &mac) const;

 private:
  bool Compute(Role role, const Nonce &nonce_i, const Nonce &nonce_t, const std::string &initiator,
               const std::string &target, Mac *mac) const;

  std::vector<uint8_t> key_;  // never logged; zeroed when destroyed
  const Crypto &crypto_;
};

// The key file an engine uses: `option` (GlobalResourceConfig auth.key_file)
// when given, else $HIXL_AUTH_KEY_FILE, else "" (none).
std::string KeyFilePath(const std::string &option);

}  // namespace hixl::auth
