// net_util.h: small socket helpers for tests that play a raw peer.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "wire/frame.h"

namespace hixl_test {

// A socket bound to a free 127.0.0.1 port and (by default) listening but
// never accepting: the kernel completes TCP handshakes, nobody answers.
// Unlistened, it just keeps the port busy.
struct SilentListener {
  int fd = -1;
  int port = 0;
  explicit SilentListener(bool listening = true) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(fd, reinterpret_cast<sockaddr *>(&a), len);
    if (listening) listen(fd, 64);
    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~SilentListener() { close(fd); }
  std::string name() const { return "127.0.0.1:" + std::to_string(port); }
};

// A whole frame: `h` (body_len set from `body`), then `body`.
inline std::vector<uint8_t> Frame(hixl::wire::FrameHeader h, const std::vector<uint8_t> &body) {
  h.body_len = static_cast<uint32_t>(body.size());
  std::vector<uint8_t> out(hixl::wire::kHeaderSize);
  hixl::wire::EncodeHeader(h, out.data());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// True when the peer ends the connection `fd` (EOF or reset) within
// `wait_ms`.
inline bool EndedWithin(int fd, int wait_ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return false;
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

// The port of an engine name "ip:port" / "[ip]:port".
inline int PortOf(const std::string &name) { return std::stoi(name.substr(name.rfind(':') + 1)); }

// TCP connections of this host in state ESTABLISHED whose remote port is
// `port` (i.e. the client sides of connections to that port).
inline int CountEstablishedTo(int port) {
  int count = 0;
  for (const char *path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state;
      f >> sl >> local >> remote >> state;
      size_t colon = remote.rfind(':');
      if (colon == std::string::npos) continue;
      if (std::stoi(remote.substr(colon + 1), nullptr, 16) == port && state == "01") ++count;
    }
  }
  return count;
}

// Threads of process `pid`.
inline int ThreadCount(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

}  // namespace hixl_test
