// free_port.h: a TCP port of the loopback address that was free a moment ago.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hixl_test {

// -1 if none could be had. family: AF_INET (127.0.0.1) or AF_INET6 (::1).
inline int FreePort(int family) {
  int fd = socket(family, SOCK_STREAM, 0);
  sockaddr_storage ss{};
  socklen_t len = family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (family == AF_INET6) {
    reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_family = AF_INET6;
    reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_addr = in6addr_loopback;
  } else {
    reinterpret_cast<sockaddr_in *>(&ss)->sin_family = AF_INET;
    reinterpret_cast<sockaddr_in *>(&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) == 0) {
    port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port
                                    : reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
  }
  close(fd);
  return port;
}

}  // namespace hixl_test
