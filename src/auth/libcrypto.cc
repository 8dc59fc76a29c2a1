#include "auth/libcrypto.h"

#include <dlfcn.h>

#include <mutex>
#include <type_traits>

#if defined(HIXL_HAVE_OPENSSL_HEADERS)
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif

namespace hixl::auth {
namespace {

#if defined(HIXL_HAVE_OPENSSL_HEADERS)
// Our pointer types must be OpenSSL's, with our opaque EvpMd for EVP_MD: a
// mismatch (a changed signature in a new OpenSSL) fails the build here
// rather than corrupting a call at run time.
static_assert(std::is_same_v<decltype(&::HMAC), Crypto::HmacOf<EVP_MD>>, "HMAC's signature changed");
static_assert(std::is_same_v<decltype(&::EVP_sha256), Crypto::Sha256Of<EVP_MD>>, "EVP_sha256's signature changed");
static_assert(std::is_same_v<decltype(&::RAND_bytes), Crypto::RandBytesFn>, "RAND_bytes's signature changed");
static_assert(std::is_same_v<decltype(&::CRYPTO_memcmp), Crypto::MemcmpFn>, "CRYPTO_memcmp's signature changed");
#endif

template <typename Fn>
bool Bind(void *handle, const char *name, Fn *out, std::string *why) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*out == nullptr) *why = std::string("libcrypto has no ") + name;
  return *out != nullptr;
}

}  // namespace

Loaded LoadFrom(const char *library) {
  Loaded l;
  // RTLD_LOCAL: its symbols stay out of the global namespace, so an
  // application linked against another OpenSSL is unaffected.
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *err = dlerror();
    l.why = std::string("cannot load ") + library + " (OpenSSL 3's libcrypto, Debian package libssl3): " +
            (err != nullptr ? err : "dlopen failed");
    return l;
  }
  Crypto &c = l.crypto;
  if (!Bind(handle, "HMAC", &c.hmac, &l.why) || !Bind(handle, "EVP_sha256", &c.sha256, &l.why) ||
      !Bind(handle, "RAND_bytes", &c.rand_bytes, &l.why) || !Bind(handle, "CRYPTO_memcmp", &c.memcmp, &l.why)) {
    dlclose(handle);
    l.crypto = Crypto();
  }
  return l;  // the handle is kept for the life of the process
}

const Crypto *LoadCrypto(std::string *why) {
  static const Loaded loaded = LoadFrom(kLibCrypto);  // once, thread-safe
  if (!loaded.why.empty()) {
    *why = loaded.why;
    return nullptr;
  }
  return &loaded.crypto;
}

}  // namespace hixl::auth
