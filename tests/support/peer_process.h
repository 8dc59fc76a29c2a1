// peer_process.h: starts hixl_test_peer and talks to it line by line.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hixl_test {

class PeerProcess {
 public:
  PeerProcess() = default;
  ~PeerProcess();
  PeerProcess(const PeerProcess &) = delete;
  PeerProcess &operator=(const PeerProcess &) = delete;

  // Set before Start: extra environment ("KEY=value"), a file for the
  // peer's stderr, a command the peer runs under (e.g. {"ip", "netns",
  // "exec", "ns1"}), and Initialize options besides GlobalResourceConfig
  // ("AutoConnect=1").
  std::vector<std::string> env;
  std::string stderr_path;
  std::vector<std::string> prefix;
  std::vector<std::string> options;

  // Starts the peer as a server on a free loopback port (ipv6: ::1).
  bool Start(bool ipv6 = false, const std::string &resource_config = "");
  // Starts the peer as a server on `local_engine` (e.g. to restart one on
  // the address a previous peer had).
  bool StartAt(const std::string &local_engine, const std::string &resource_config = "");
  // Sends one command; returns the reply line ("" on timeout or exit).
  std::string Command(const std::string &cmd, int timeout_ms = 30000);
  // The two halves of Command, for commands to several peers at once.
  bool Send(const std::string &cmd);
  std::string ReadLine(int timeout_ms = 30000);
  // Convenience: ALLOC + REG; returns the buffer's address. `kind`: ALLOC's
  // second word ("memfd"...), none for anonymous memory.
  uintptr_t AllocRegistered(size_t len, size_t *id, uintptr_t *handle = nullptr, const std::string &kind = "");
  uint64_t HashOf(size_t id, size_t off, size_t len);
  void Kill(int sig);
  // QUIT, then wait for exit (SIGKILL after timeout_ms).
  void Stop(int timeout_ms = 5000);

  const std::string &name() const { return name_; }
  pid_t pid() const { return pid_; }

 private:
  bool Spawn(const std::string &mode, const std::string &resource_config);
  pid_t pid_ = -1;
  int to_fd_ = -1;
  int from_fd_ = -1;
  std::string name_;
  std::string pending_;
};

// Splits a reply into words.
std::vector<std::string> Words(const std::string &line);

}  // namespace hixl_test
