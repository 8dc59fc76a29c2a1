// hixl_soak: see soak.h. Usage:
//   hixl_soak [--seconds N] [--targets N] [--initiators N] [--seed N] [--dir D]
//             [--self-check 1] [--transports tcp,any,ucx]
// (the orchestrator; the roles target and initiator are its children).
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "soak/child.h"
#include "soak/layout.h"
#include "soak/soak.h"

namespace soak {

bool ParseTransports(const std::string &list, std::vector<std::string> *out) {
  std::vector<std::string> got;
  std::istringstream in(list);
  for (std::string t; std::getline(in, t, ',');) {
    if (t != "tcp" && t != "any" && t != "ucx") return false;
    got.push_back(t);
  }
  if (got.empty()) return false;
  *out = got;
  return true;
}

}  // namespace soak

int main(int argc, char **argv) {
  soak::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--role") a.role = v;
    else if (k == "--seconds") a.seconds = std::atoi(v.c_str());
    else if (k == "--targets") a.targets = std::atoi(v.c_str());
    else if (k == "--initiators") a.initiators = std::atoi(v.c_str());
    else if (k == "--seed") a.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--dir") a.dir = v;
    else if (k == "--self-check") a.self_check = v == "1";
    else if (k == "--index") a.index = std::atoi(v.c_str());
    else if (k == "--incarnation") a.incarnation = std::atoi(v.c_str());
    else if (k == "--freezes") a.freezes = v;
    else if (k == "--transports") {
      if (!soak::ParseTransports(v, &a.transports)) {
        std::fprintf(stderr, "hixl_soak: --transports takes a list of tcp, any, ucx, not '%s'\n", v.c_str());
        return 2;
      }
    }
    else if (k == "--ports") {
      std::istringstream in(v);
      for (std::string p; std::getline(in, p, ',');) a.ports.push_back(std::atoi(p.c_str()));
    } else {
      std::fprintf(stderr, "hixl_soak: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.seconds < 1 || a.targets < 1 || a.targets > soak::kMaxTargets || a.initiators < 1 ||
      a.initiators > soak::kMaxInitiators) {
    std::fprintf(stderr, "hixl_soak: --seconds >= 1, --targets 1..%d, --initiators 1..%d\n", soak::kMaxTargets,
                 soak::kMaxInitiators);
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a peer killed mid-write must not take us along
  if (a.role == "run") return soak::RunOrchestrator(a);
  // A child dies with its orchestrator (a run cut short by a CI timeout).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  uint64_t *freezes = soak::MapFreezes(a.freezes, false);
  if (freezes == nullptr) {
    std::fprintf(stderr, "hixl_soak: cannot map the freeze counts '%s'\n", a.freezes.c_str());
    return 1;
  }
  soak::g_freezes = freezes + soak::FreezeSlot(a.role == "target", a.index);
  if (a.role == "target") return soak::RunTarget(a);
  if (a.role == "initiator") return soak::RunInitiator(a);
  std::fprintf(stderr, "hixl_soak: unknown role %s\n", a.role.c_str());
  return 2;
}
