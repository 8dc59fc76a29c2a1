#include "tcp_baseline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace hixl_bench {
namespace {

enum : uint64_t { kCmdWrite = 1, kCmdRead = 2, kCmdPing = 3 };

struct Command {
  uint64_t type;
  uint64_t bytes;
  uint64_t offset;
};

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

// Moves `bytes` through buf[offset..], wrapping around at `size`: the peer
// serves any amount from a buffer of fixed size.
bool Stream(int fd, bool sending, char *buf, uint64_t size, uint64_t offset, uint64_t bytes) {
  uint64_t pos = offset % size;
  while (bytes > 0) {
    size_t step = static_cast<size_t>(std::min(bytes, size - pos));
    if (!(sending ? FullSend(fd, buf + pos, step) : FullRecv(fd, buf + pos, step))) return false;
    bytes -= step;
    pos = 0;
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

// Serves one connection with a buffer of its own, allocated at its first
// command: connections never share memory (which a race detector could not
// tell from a race, as their order is kept only by the client), and one
// that only pings (the connect baseline) never pays for it.
void Serve(int fd, uint64_t size) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char *buf = nullptr;
  std::vector<char> ping;
  Command cmd;
  while (FullRecv(fd, &cmd, sizeof(cmd))) {
    char ack = 1;
    bool ok = false;
    if (cmd.type == kCmdPing && cmd.bytes <= size) {
      if (ping.size() < cmd.bytes) ping.resize(cmd.bytes);
      ok = FullRecv(fd, ping.data(), cmd.bytes) && FullSend(fd, ping.data(), cmd.bytes);
    } else if (cmd.type == kCmdWrite || cmd.type == kCmdRead) {
      if (buf == nullptr && (buf = static_cast<char *>(AllocBuffer(size))) == nullptr) break;
      ok = cmd.type == kCmdWrite ? Stream(fd, false, buf, size, cmd.offset, cmd.bytes) && FullSend(fd, &ack, 1)
                                 : Stream(fd, true, buf, size, cmd.offset, cmd.bytes);
    }
    if (!ok) break;
  }
  FreeBuffer(buf, size);
  close(fd);
}

// Threads block in accept() on the listening socket, and the kernel hands
// each connection to one of them, which serves it to the end and then
// accepts again. A thread that takes the last idle slot starts one more
// first, so there is always an acceptor. No thread is started on the path
// of a connection once the pool has grown to the run's concurrency, which
// keeps thread start-up (a scheduler tick on a busy machine) out of the
// connect-latency baseline.
struct Acceptors {
  int ls;
  uint64_t size;
  std::atomic<int> idle{0};
};

void AcceptLoop(Acceptors *a) {
  for (;;) {
    int fd = accept(a->ls, nullptr, nullptr);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    if (a->idle.fetch_sub(1) == 1) {
      a->idle.fetch_add(1);
      std::thread(AcceptLoop, a).detach();
    }
    Serve(fd, a->size);
    a->idle.fetch_add(1);
  }
}

}  // namespace

int RunTcpPeer(const std::string &host, int port, uint64_t buffer_size) {
  sockaddr_storage ss;
  socklen_t len;
  if (!MakeAddr(host, port, &ss, &len)) return 2;
  int ls = socket(ss.ss_family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(ls, reinterpret_cast<sockaddr *>(&ss), len) != 0 || listen(ls, 64) != 0) {
    std::perror("tcp-peer bind/listen");
    return 1;
  }
  // Lives until exit: detached acceptors use it.
  auto *acceptors = new Acceptors{ls, buffer_size};
  constexpr int kInitialAcceptors = 4;
  acceptors->idle = kInitialAcceptors;
  for (int i = 0; i < kInitialAcceptors; ++i) std::thread(AcceptLoop, acceptors).detach();
  std::printf("READY tcp-peer\n");
  std::fflush(stdout);
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0) {
  }
  // Our parent closed our stdin: exit (the acceptors and connections end
  // with the process).
  return 0;
}

TcpConn::~TcpConn() { Close(); }

void TcpConn::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool TcpConn::Connect(const std::string &host, int port) {
  Close();
  sockaddr_storage ss;
  socklen_t len;
  if (!MakeAddr(host, port, &ss, &len)) return false;
  fd_ = socket(ss.ss_family, SOCK_STREAM, 0);
  if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
    Close();
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

bool TcpConn::Move(bool write, char *local, uint64_t remote_offset, uint64_t bytes) {
  Command cmd{write ? kCmdWrite : kCmdRead, bytes, remote_offset};
  if (!FullSend(fd_, &cmd, sizeof(cmd))) return false;
  if (write) {
    char ack;
    return FullSend(fd_, local, bytes) && FullRecv(fd_, &ack, 1);
  }
  return FullRecv(fd_, local, bytes);
}

double TcpConn::PingPong(char *local, uint64_t bytes) {
  Command cmd{kCmdPing, bytes, 0};
  double t0 = NowSeconds();
  // Command and payload in one segment, as a real request would go.
  iovec iov[2] = {{&cmd, sizeof(cmd)}, {local, bytes}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  if (sendmsg(fd_, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(cmd) + bytes)) return -1;
  if (!FullRecv(fd_, local, bytes)) return -1;
  return NowSeconds() - t0;
}

}  // namespace hixl_bench
