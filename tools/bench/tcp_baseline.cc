#include "tcp_baseline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace hixl_bench {
namespace {

enum : uint64_t { kCmdWrite = 1, kCmdRead = 2, kCmdPing = 3 };

bool FullSend(int fd, const void *p, size_t n) {
  auto *c = static_cast<const char *>(p);
  while (n > 0) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool FullRecv(int fd, void *p, size_t n) {
  auto *c = static_cast<char *>(p);
  while (n > 0) {
    ssize_t k = recv(fd, c, n, 0);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Moves `bytes` through a buffer of `size` bytes, wrapping around.
bool Stream(int fd, bool sending, char *buf, uint64_t size, uint64_t bytes) {
  while (bytes > 0) {
    size_t step = static_cast<size_t>(std::min(bytes, size));
    if (!(sending ? FullSend(fd, buf, step) : FullRecv(fd, buf, step))) return false;
    bytes -= step;
  }
  return true;
}

bool MakeAddr(const std::string &host, int port, sockaddr_storage *ss, socklen_t *len) {
  std::memset(ss, 0, sizeof(*ss));
  auto *s6 = reinterpret_cast<sockaddr_in6 *>(ss);
  auto *s4 = reinterpret_cast<sockaddr_in *>(ss);
  if (inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(*s6);
    return true;
  }
  if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(*s4);
    return true;
  }
  return false;
}

void Serve(int fd, uint64_t size) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  auto *buf = static_cast<char *>(AllocBuffer(size));
  uint64_t cmd[2];
  while (buf != nullptr && FullRecv(fd, cmd, sizeof(cmd))) {
    char ack = 1;
    bool ok = false;
    if (cmd[0] == kCmdWrite) {
      ok = Stream(fd, false, buf, size, cmd[1]) && FullSend(fd, &ack, 1);
    } else if (cmd[0] == kCmdRead) {
      ok = Stream(fd, true, buf, size, cmd[1]);
    } else if (cmd[0] == kCmdPing && cmd[1] <= size) {
      ok = FullRecv(fd, buf, cmd[1]) && FullSend(fd, buf, cmd[1]);
    }
    if (!ok) break;
  }
  FreeBuffer(buf, size);
  close(fd);
}

}  // namespace

int RunTcpPeer(const std::string &host, int port, uint64_t buffer_size) {
  sockaddr_storage ss;
  socklen_t len;
  if (!MakeAddr(host, port, &ss, &len)) return 2;
  int ls = socket(ss.ss_family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(ls, reinterpret_cast<sockaddr *>(&ss), len) != 0 || listen(ls, 16) != 0) {
    std::perror("tcp-peer bind/listen");
    return 1;
  }
  std::printf("READY tcp-peer\n");
  std::fflush(stdout);
  std::vector<std::thread> threads;
  for (;;) {
    pollfd p[2] = {{ls, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) break;
    if (p[1].revents != 0) {
      char c;
      if (read(STDIN_FILENO, &c, 1) <= 0) break;  // parent closed our stdin: exit
    }
    if (p[0].revents & POLLIN) {
      int fd = accept(ls, nullptr, nullptr);
      if (fd >= 0) threads.emplace_back(Serve, fd, buffer_size);
    }
  }
  close(ls);
  for (auto &t : threads) t.detach();
  return 0;
}

TcpBaselineClient::~TcpBaselineClient() {
  if (fd_ >= 0) close(fd_);
  FreeBuffer(buf_, size_);
}

bool TcpBaselineClient::Connect(const std::string &host, int port, uint64_t buffer_size) {
  sockaddr_storage ss;
  socklen_t len;
  if (!MakeAddr(host, port, &ss, &len)) return false;
  fd_ = socket(ss.ss_family, SOCK_STREAM, 0);
  if (connect(fd_, reinterpret_cast<sockaddr *>(&ss), len) != 0) return false;
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  size_ = buffer_size;
  buf_ = AllocBuffer(size_);
  return buf_ != nullptr;
}

double TcpBaselineClient::Move(bool write, uint64_t bytes) {
  uint64_t cmd[2] = {write ? kCmdWrite : kCmdRead, bytes};
  char *buf = static_cast<char *>(buf_);
  double t0 = NowSeconds();
  if (!FullSend(fd_, cmd, sizeof(cmd))) return -1;
  if (write) {
    char ack;
    if (!Stream(fd_, true, buf, size_, bytes) || !FullRecv(fd_, &ack, 1)) return -1;
  } else if (!Stream(fd_, false, buf, size_, bytes)) {
    return -1;
  }
  return NowSeconds() - t0;
}

double TcpBaselineClient::PingPong(uint64_t bytes) {
  uint64_t cmd[2] = {kCmdPing, bytes};
  double t0 = NowSeconds();
  // Command and payload in one segment, as a real request would go.
  iovec iov[2] = {{cmd, sizeof(cmd)}, {buf_, bytes}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  if (sendmsg(fd_, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(cmd) + bytes)) return -1;
  if (!FullRecv(fd_, buf_, bytes)) return -1;
  return NowSeconds() - t0;
}

}  // namespace hixl_bench
