#include "transport/tcp/socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/fork_fds.h"

namespace hixl::tcp {
namespace {

std::string Errno(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

// Waits for `events` on fd until the deadline: SUCCESS, TIMEOUT or FAILED
// (also when `cancel` turns true: it is looked at every 100 ms).
Status WaitFd(int fd, short events, Deadline deadline, std::string *why, const std::atomic<bool> *cancel) {
  for (;;) {
    if (cancel != nullptr && cancel->load()) {
      *why = "cancelled (engine finalizing)";
      return FAILED;
    }
    pollfd p{fd, events, 0};
    const int left = deadline.RemainingMillis();
    int n = poll(&p, 1, cancel != nullptr ? std::min(left, 100) : left);
    if (n > 0) return SUCCESS;
    if (n == 0 && (left <= 100 || cancel == nullptr)) {
      *why = "timed out";
      return TIMEOUT;
    }
    if (n == 0) continue;
    if (errno != EINTR) {
      *why = Errno("poll");
      return FAILED;
    }
  }
}

}  // namespace

void TuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // The heartbeat notices a peer that stopped answering, but it can be off
  // (heartbeat.interval_ms 0): then a peer whose host vanished (no FIN, no
  // RST) would hold its stream, fd and pins for good. The kernel's probes end
  // such a stream after about two minutes of silence.
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int idle_s = kKeepAliveIdleS, interval_s = kKeepAliveIntervalS, count = kKeepAliveProbes;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

int ListenTcp(const EngineAddress &addr, std::string *why) {
  const int fd = OpenKeptFd([&] { return socket(addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); });
  if (fd < 0) {
    *why = Errno("socket");
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (addr.family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  sockaddr_storage ss{};
  socklen_t len = addr.ToSockaddr(&ss);
  if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
    *why = Errno(("bind " + addr.ToString()).c_str());
    CloseKeptFd(fd);
    return -1;
  }
  if (listen(fd, 1024) != 0) {
    *why = Errno("listen");
    CloseKeptFd(fd);
    return -1;
  }
  return fd;
}

bool IsLocalIp(const EngineAddress &addr, std::string *why) {
  EngineAddress probe = addr;
  probe.port = 0;
  int fd = socket(addr.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = Errno("socket");
    return false;
  }
  sockaddr_storage ss{};
  socklen_t len = probe.ToSockaddr(&ss);
  bool ok = bind(fd, reinterpret_cast<sockaddr *>(&ss), len) == 0;
  if (!ok) *why = Errno(("bind " + addr.ip).c_str());
  close(fd);
  return ok;
}

Status DialTcp(const EngineAddress &remote, Deadline deadline, int *out, std::string *why,
               const std::atomic<bool> *cancel) {
  const int fd = OpenKeptFd([&] { return socket(remote.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); });
  if (fd < 0) {
    *why = Errno("socket");
    return FAILED;
  }
  sockaddr_storage ss{};
  socklen_t len = remote.ToSockaddr(&ss);
  if (connect(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
    if (errno != EINPROGRESS) {
      *why = Errno("connect");
      CloseKeptFd(fd);
      return FAILED;
    }
    Status s = WaitFd(fd, POLLOUT, deadline, why, cancel);
    if (s != SUCCESS) {
      if (s == TIMEOUT) *why = "connect timed out";
      CloseKeptFd(fd);
      return s;
    }
    int err = 0;
    socklen_t elen = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) {
      *why = std::string("connect: ") + std::strerror(err);
      CloseKeptFd(fd);
      return FAILED;
    }
  }
  TuneSocket(fd);
  *out = fd;
  return SUCCESS;
}

Status SendAll(int fd, const void *data, size_t len, Deadline deadline, std::string *why,
               const std::atomic<bool> *cancel) {
  auto *p = static_cast<const uint8_t *>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Status s = WaitFd(fd, POLLOUT, deadline, why, cancel);
      if (s != SUCCESS) return s;
      continue;
    }
    *why = Errno("send");
    return FAILED;
  }
  return SUCCESS;
}

Status RecvAll(int fd, void *data, size_t len, Deadline deadline, std::string *why,
               const std::atomic<bool> *cancel) {
  auto *p = static_cast<uint8_t *>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      *why = "peer closed the connection";
      return FAILED;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status s = WaitFd(fd, POLLIN, deadline, why, cancel);
      if (s != SUCCESS) return s;
      continue;
    }
    *why = Errno("recv");
    return FAILED;
  }
  return SUCCESS;
}

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  EngineAddress a;
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0 ||
      !SockaddrToAddress(reinterpret_cast<sockaddr *>(&ss), &a)) {
    return "?";
  }
  return a.ToString();
}

}  // namespace hixl::tcp
