// libcrypto.h: the four functions of OpenSSL's libcrypto that peer
// authentication needs, loaded at run time (dlopen "libcrypto.so.3"), so
// that libhixl has no link-time dependency on OpenSSL and an engine without
// a key never loads it. Where the build finds openssl/hmac.h, libcrypto.cc
// checks these declarations against OpenSSL's own.
#pragma once

#include <cstddef>
#include <string>

namespace hixl::auth {

// Opaque, as in OpenSSL.
struct EvpMd;

struct Crypto {
  // Templates over the digest type, so that libcrypto.cc can compare them,
  // with OpenSSL's EVP_MD, to the headers' declarations.
  template <typename Md>
  using HmacOf = unsigned char *(*)(const Md *md, const void *key, int key_len, const unsigned char *data,
                                    size_t data_len, unsigned char *out, unsigned int *out_len);
  template <typename Md>
  using Sha256Of = const Md *(*)();
  using HmacFn = HmacOf<EvpMd>;
  using Sha256Fn = Sha256Of<EvpMd>;
  using RandBytesFn = int (*)(unsigned char *buf, int num);
  using MemcmpFn = int (*)(const void *a, const void *b, size_t len);

  HmacFn hmac = nullptr;          // HMAC
  Sha256Fn sha256 = nullptr;      // EVP_sha256
  RandBytesFn rand_bytes = nullptr;  // RAND_bytes: the CSPRNG
  MemcmpFn memcmp = nullptr;      // CRYPTO_memcmp: constant time
};

// The library's name as dlopen is given it.
constexpr const char *kLibCrypto = "libcrypto.so.3";

struct Loaded {
  Crypto crypto;
  std::string why;  // empty when loaded
};
// Loads `library` and binds the functions (for LoadCrypto, and for tests
// with a library that is not there). A loaded library is never unloaded.
Loaded LoadFrom(const char *library);

// The process's libcrypto, loaded on the first call and kept (never
// unloaded); nullptr with the reason in *why when it cannot be loaded or
// lacks a function. Thread-safe.
const Crypto *LoadCrypto(std::string *why);

}  // namespace hixl::auth
