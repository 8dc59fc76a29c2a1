#include "auth/authenticator.h"

#include <cstdlib>
#include <cstring>

#include "auth/key_file.h"
#include "common/log.h"

namespace hixl::auth {
namespace {

void PutString(const std::string &s, std::vector<uint8_t> *out) {
  const auto n = static_cast<uint32_t>(s.size());
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(n >> (8 * i)));
  out->insert(out->end(), s.begin(), s.end());
}

}  // namespace

Status Authenticator::FromFile(const std::string &path, std::shared_ptr<const Authenticator> *out,
                               std::string *why) {
  std::vector<uint8_t> key;
  Status s = ReadKeyFile(path, &key, why);
  if (s != SUCCESS) return s;
  const Crypto *crypto = LoadCrypto(why);
  if (crypto == nullptr) {
    explicit_bzero(key.data(), key.size());  // (not empty: ReadKeyFile succeeded)
    *why = "auth key file '" + path + "' is set, but " + *why;
    return FAILED;
  }
  *out = std::make_shared<const Authenticator>(std::move(key), *crypto);
  return SUCCESS;
}

Authenticator::Authenticator(std::vector<uint8_t> key, const Crypto &crypto) : key_(std::move(key)), crypto_(crypto) {}

Authenticator::~Authenticator() {
  if (!key_.empty()) explicit_bzero(key_.data(), key_.size());
}

bool Authenticator::NewNonce(Nonce *out) const {
  if (crypto_.rand_bytes(out->data(), static_cast<int>(out->size())) != 1) {
    HIXL_LOGE("auth: RAND_bytes failed: no nonce for a handshake");
    return false;
  }
  return true;
}

bool Authenticator::Compute(Role role, const Nonce &nonce_i, const Nonce &nonce_t, const std::string &initiator,
                            const std::string &target, Mac *mac) const {
  static constexpr char kLabelI[] = "hixl-auth-i";
  static constexpr char kLabelT[] = "hixl-auth-t";
  const char *label = role == Role::kInitiator ? kLabelI : kLabelT;
  std::vector<uint8_t> msg(label, label + sizeof(kLabelI) - 1);
  msg.insert(msg.end(), nonce_i.begin(), nonce_i.end());
  msg.insert(msg.end(), nonce_t.begin(), nonce_t.end());
  PutString(initiator, &msg);
  PutString(target, &msg);
  unsigned int len = 0;
  if (crypto_.hmac(crypto_.sha256(), key_.data(), static_cast<int>(key_.size()), msg.data(), msg.size(), mac->data(),
                   &len) == nullptr ||
      len != mac->size()) {
    HIXL_LOGE("auth: HMAC-SHA256 failed (%u bytes)", len);
    return false;
  }
  return true;
}

Mac Authenticator::Prove(Role role, const Nonce &nonce_i, const Nonce &nonce_t, const std::string &initiator,
                         const std::string &target) const {
  Mac mac{};
  // (Failing cannot happen with SHA-256; the peer then refuses the zeros.)
  if (!Compute(role, nonce_i, nonce_t, initiator, target, &mac)) mac.fill(0);
  return mac;
}

bool Authenticator::Check(Role role, const Nonce &nonce_i, const Nonce &nonce_t, const std::string &initiator,
                          const std::string &target, const Mac &mac) const {
  Mac want{};
  return Compute(role, nonce_i, nonce_t, initiator, target, &want) && Same(want, mac);
}

std::string KeyFilePath(const std::string &option) {
  if (!option.empty()) return option;
  const char *env = std::getenv("HIXL_AUTH_KEY_FILE");
  return env != nullptr ? env : "";
}

}  // namespace hixl::auth
