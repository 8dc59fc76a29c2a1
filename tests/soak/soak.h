// soak.h: hixl_soak, many processes moving and checking bytes for a long
// time while they are killed, restarted, and their regions and links come
// and go. One binary, three roles: the orchestrator (the default) spawns
// targets and initiators as children of its own and drives the faults.
// docs/testing.md says what is checked; scripts/soak.sh runs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace soak {

struct Args {
  std::string role = "run";  // run | target | initiator
  int seconds = 60;          // run: how long the churn lasts
  int targets = 3;
  int initiators = 3;
  uint64_t seed = 1;
  std::string dir = ".";     // run: where the children's logs go
  // Each initiator's transports, cycled by index: tcp (tcp:host only), any
  // (the default: shm to these same-host targets), ucx (ucx:host only).
  std::vector<std::string> transports = {"tcp", "any"};
  // run: the soak checks itself: target 0 flips bytes in slots and guards,
  // and the run passes only if both kinds were caught.
  bool self_check = false;
  // target and initiator: which one, and (initiator) which life of it.
  int index = 0;
  int incarnation = 0;
  std::vector<int> ports;    // the targets' ports, in order
  std::string freezes;       // the orchestrator's freeze counts (freezes.h)
};

// "tcp,any,ucx" -> Args::transports; false on an unknown name or none.
bool ParseTransports(const std::string &list, std::vector<std::string> *out);
// Whether some initiator is of kind `t`.
inline bool Asks(const Args &a, const std::string &t) {
  for (const std::string &x : a.transports) {
    if (x == t) return true;
  }
  return false;
}
// Initiator `index`'s entry of `transports`.
inline const std::string &TransportOf(const Args &a, int index) {
  return a.transports[static_cast<size_t>(index) % a.transports.size()];
}

int RunOrchestrator(const Args &args);
int RunTarget(const Args &args);
int RunInitiator(const Args &args);

}  // namespace soak
