// registry.h: the transports an engine can use, by name. The engine lists
// this build's transports once (engine/transports.cc); tests may add their
// own before they start engines.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "transport/transport.h"

namespace hixl {

struct TransportInfo {
  std::string name;                  // canonical, as Transport::name()
  std::vector<std::string> aliases;  // other names protocol_desc may use for it
  // The placements of protocol_desc ("host", "device") it serves.
  std::vector<std::string> placements = {"host"};
  // Default order when protocol_desc names none: lower first (same host,
  // then the fastest network path, tcp last).
  int rank = 100;
  // The engine's instance. SUCCESS; PARAM_INVALID for a bad setting of its
  // own (env.config) with *why; or UNSUPPORTED with *why when it cannot run
  // here (a plug-in or library missing): the engine then goes on without
  // it, with one warning.
  std::function<Status(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why)> make;
};

class TransportRegistry {
 public:
  // Adds `info`, or replaces the entry of the same name.
  void Add(TransportInfo info);
  // The entry `protocol` names (its name or an alias), copied; false if none.
  bool Find(const std::string &protocol, TransportInfo *out) const;
  bool Knows(const std::string &protocol) const;
  // Every entry, by rank.
  std::vector<TransportInfo> All() const;

 private:
  // Guards the entries: tests add theirs while engines of earlier tests
  // may still look them up.
  mutable Mutex mu_;
  std::vector<TransportInfo> entries_ GUARDED_BY(mu_);
};

// This build's transports (made at first use by BuildTransports, in
// engine/transports.cc), and those tests add.
TransportRegistry &Transports();
void BuildTransports(TransportRegistry *registry);

// For transports: GlobalResourceConfig field `key` of `env.config` as an
// integer in lo..hi (absent: *out untouched). PARAM_INVALID with *why naming
// "<transport>.<key>" otherwise.
Status TransportConfigUint(const TransportEnv &env, const char *transport, const char *key, uint64_t lo, uint64_t hi,
                           uint32_t *out, std::string *why);

}  // namespace hixl
