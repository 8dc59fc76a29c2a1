#include "netns/two_hosts.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace hixl_test {
namespace {

constexpr char kPrefix[] = "hixl2h";

bool Shell(const std::string &cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// Namespaces named hixl2h<X><pid> whose pid no longer runs.
void RemoveStale() {
  DIR *d = opendir("/run/netns");
  if (d == nullptr) return;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, sizeof(kPrefix) - 1, kPrefix) != 0 || name.size() < sizeof(kPrefix) + 1) continue;
    long pid = std::strtol(name.c_str() + sizeof(kPrefix), nullptr, 10);
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) Shell("ip netns del " + name);
  }
  closedir(d);
}

}  // namespace

std::string TwoHosts::Create() {
  RemoveStale();
  const std::string pid = std::to_string(getpid());
  ns_[kA] = kPrefix + std::string("a") + pid;
  ns_[kB] = kPrefix + std::string("b") + pid;
  dev_[kA] = "hx2a" + pid;
  dev_[kB] = "hx2b" + pid;
  made_ = true;
  const std::string steps[] = {
      "ip netns add " + ns_[kA],
      "ip netns add " + ns_[kB],
      // Made in place: the pair never appears in the caller's namespace.
      "ip link add " + dev_[kA] + " netns " + ns_[kA] + " type veth peer name " + dev_[kB] + " netns " + ns_[kB],
  };
  for (const auto &c : steps) {
    if (!Shell(c)) return c;
  }
  for (Side s : {kA, kB}) {
    for (const std::string &c : {std::string("ip link set lo up"), "ip link set " + dev_[s] + " up"}) {
      if (!Run(s, c)) return c;
    }
    if (!RestoreAddress(s)) return "ip addr add " + ip_[s];
  }
  return "";
}

void TwoHosts::Destroy() {
  if (!made_) return;
  for (Side s : {kA, kB}) Shell("ip netns del " + ns_[s]);
  made_ = false;
}

bool TwoHosts::Run(Side s, const std::string &cmd) const { return Shell("ip netns exec " + ns_[s] + " " + cmd); }

bool TwoHosts::Partition() {
  const std::string t = "inet hixl_partition";
  return Run(kB, "nft 'add table " + t + "; add chain " + t +
                     " in { type filter hook input priority 0; }; add chain " + t +
                     " out { type filter hook output priority 0; }; add rule " + t + " in iifname \"" + dev_[kB] +
                     "\" drop; add rule " + t + " out oifname \"" + dev_[kB] + "\" drop'");
}

bool TwoHosts::Heal() { return Run(kB, "nft delete table inet hixl_partition"); }

bool TwoHosts::Shape(const std::string &rate) {
  // A 2 MB bucket (16 ms at 1 Gbit/s: GSO packets of 64 KiB pass whole) and
  // a queue of 20 ms: TCP keeps the link full without much added delay.
  for (Side s : {kA, kB}) {
    if (!Run(s, "tc qdisc replace dev " + dev_[s] + " root tbf rate " + rate + " burst 2mb latency 20ms")) return false;
  }
  return true;
}

bool TwoHosts::DropAddress(Side s) { return Run(s, "ip addr del " + ip_[s] + "/24 dev " + dev_[s]); }

bool TwoHosts::RestoreAddress(Side s) {
  return Run(s, "ip addr add " + ip_[s] + "/24 dev " + dev_[s]);
}

}  // namespace hixl_test
