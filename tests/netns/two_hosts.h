// two_hosts.h: two "hosts" on one kernel: network namespaces A and B joined
// by a veth pair (A 10.233.0.1/24, B 10.233.0.2/24), and the faults a real
// network has: a partition (nftables drop rules in B), a shaped link (tbf on
// both ends) and an address going away. Needs root (CAP_NET_ADMIN).
//
// The namespaces carry this process's pid in their names; Create() first
// removes any left by a test process that no longer runs (one killed before
// it could clean up).
#pragma once

#include <string>
#include <vector>

namespace hixl_test {

class TwoHosts {
 public:
  enum Side { kA = 0, kB = 1 };

  TwoHosts() = default;
  ~TwoHosts() { Destroy(); }
  TwoHosts(const TwoHosts &) = delete;
  TwoHosts &operator=(const TwoHosts &) = delete;

  // Empty on success, else the command that failed.
  std::string Create();
  // Deletes both namespaces (with them the veth pair, rules and qdiscs).
  void Destroy();

  const std::string &ip(Side s) const { return ip_[s]; }
  // What a process runs under to live on that host.
  std::vector<std::string> Prefix(Side s) const { return {"ip", "netns", "exec", ns_[s]}; }

  // Every packet between the hosts dropped, or no longer.
  bool Partition();
  bool Heal();
  // Both directions shaped to `rate` (tc syntax, e.g. "2gbit").
  bool Shape(const std::string &rate);
  // Side s loses its address (and with it the route to the other), or gets it back.
  bool DropAddress(Side s);
  bool RestoreAddress(Side s);
  // Runs `cmd` in side s's namespace; true if it exits 0.
  bool Run(Side s, const std::string &cmd) const;

 private:
  std::string ns_[2];
  std::string dev_[2];
  std::string ip_[2] = {"10.233.0.1", "10.233.0.2"};
  bool made_ = false;
};

}  // namespace hixl_test
