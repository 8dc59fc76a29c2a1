// net_util.h: small socket helpers for tests that play a raw peer.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
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

// Opens a raw TCP connection to `name` ("ip:port" or "[ip]:port"), from
// the IPv4 address `source` if given.
inline int RawConnect(const std::string &name, const char *source = nullptr) {
  bool v6 = name[0] == '[';
  size_t colon = name.rfind(':');
  std::string ip = v6 ? name.substr(1, colon - 2) : name.substr(0, colon);
  int port = std::stoi(name.substr(colon + 1));
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, ip.c_str(), &a->sin6_addr);
    len = sizeof(*a);
  } else {
    auto *a = reinterpret_cast<sockaddr_in *>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, ip.c_str(), &a->sin_addr);
    len = sizeof(*a);
  }
  if (source != nullptr && !v6) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr *>(&from), sizeof(from)) != 0) {
      close(fd);
      return -1;
    }
  }
  if (connect(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads exactly `n` bytes from a blocking socket, or gives up at `deadline`.
inline bool RecvExactly(int fd, void *p, size_t n, std::chrono::steady_clock::time_point deadline) {
  size_t off = 0;
  while (off < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    timeval tv{static_cast<time_t>(left.count() / 1000), static_cast<suseconds_t>((left.count() % 1000) * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssize_t r = recv(fd, static_cast<uint8_t *>(p) + off, n - off, 0);
    if (r <= 0) return false;
    off += static_cast<size_t>(r);
  }
  return true;
}

// Sends all of `bytes` on a blocking socket; false if the peer is gone.
inline bool SendAll(int fd, const std::vector<uint8_t> &bytes) {
  for (size_t off = 0; off < bytes.size();) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
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

// Inodes of the sockets this process holds open.
inline std::set<std::string> OwnSocketInodes() {
  std::set<std::string> inodes;
  DIR *d = opendir("/proc/self/fd");
  if (d == nullptr) return inodes;
  while (dirent *e = readdir(d)) {
    char target[64];
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    std::string t(target);  // "socket:[12345]"
    if (t.rfind("socket:[", 0) == 0 && t.back() == ']') inodes.insert(t.substr(8, t.size() - 9));
  }
  closedir(d);
  return inodes;
}

// TCP connections of this process in state ESTABLISHED whose remote port is
// `port` (i.e. our client sides of connections to that port). Only our own
// sockets count: a server-side socket of another test running alongside has
// as remote port its client's ephemeral port, which may be the same number.
inline int CountEstablishedTo(int port) {
  const std::set<std::string> own = OwnSocketInodes();
  int count = 0;
  for (const char *path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retrnsmt, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retrnsmt >> uid >> timeout >> inode;
      size_t colon = remote.rfind(':');
      if (colon == std::string::npos || state != "01" || own.count(inode) == 0) continue;
      if (std::stoi(remote.substr(colon + 1), nullptr, 16) == port) ++count;
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
