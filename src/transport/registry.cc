#include "transport/registry.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace hixl {

void TransportRegistry::Add(TransportInfo info) {
  MutexLock lock(&mu_);
  for (auto &e : entries_) {
    if (e.name == info.name) {
      e = std::move(info);
      return;
    }
  }
  entries_.push_back(std::move(info));
  std::stable_sort(entries_.begin(), entries_.end(), [](const auto &a, const auto &b) { return a.rank < b.rank; });
}

bool TransportRegistry::Find(const std::string &protocol, TransportInfo *out) const {
  MutexLock lock(&mu_);
  for (const auto &e : entries_) {
    if (e.name == protocol || std::find(e.aliases.begin(), e.aliases.end(), protocol) != e.aliases.end()) {
      if (out != nullptr) *out = e;
      return true;
    }
  }
  return false;
}

bool TransportRegistry::Knows(const std::string &protocol) const { return Find(protocol, nullptr); }

std::vector<TransportInfo> TransportRegistry::All() const {
  MutexLock lock(&mu_);
  return entries_;
}

TransportRegistry &Transports() {
  static TransportRegistry *registry = [] {
    auto *r = new TransportRegistry();  // never destroyed: engines may outlive static destruction
    BuildTransports(r);
    return r;
  }();
  return *registry;
}

Status TransportConfigUint(const TransportEnv &env, const char *transport, const char *key, uint64_t lo, uint64_t hi,
                           uint32_t *out, std::string *why) {
  auto it = env.config.find(key);
  if (it == env.config.end()) return SUCCESS;
  const std::string &text = it->second;
  char *end = nullptr;
  errno = 0;
  const unsigned long long v = text.empty() || text[0] == '-' ? 0 : std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || errno != 0 || end == nullptr || *end != '\0' || v < lo || v > hi) {
    *why = std::string("GlobalResourceConfig: ") + transport + "." + key + "=" + text + " is not an integer in " +
           std::to_string(lo) + ".." + std::to_string(hi);
    return PARAM_INVALID;
  }
  *out = static_cast<uint32_t>(v);
  return SUCCESS;
}

}  // namespace hixl
