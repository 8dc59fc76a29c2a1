#include "integration/tcp_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>

namespace hixl_test {

uint64_t BytesDeliveredTo(int port) {
  uint64_t total = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (dirent *e = readdir(d)) {
    char *end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&peer), &len) != 0) continue;
    int peer_port = -1;
    if (peer.ss_family == AF_INET) peer_port = ntohs(reinterpret_cast<sockaddr_in *>(&peer)->sin_port);
    if (peer.ss_family == AF_INET6) peer_port = ntohs(reinterpret_cast<sockaddr_in6 *>(&peer)->sin6_port);
    if (peer_port != port) continue;
    tcp_info info{};
    socklen_t info_len = sizeof(info);
    if (getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &info, &info_len) == 0) total += info.tcpi_bytes_acked;
  }
  closedir(d);
  return total;
}

}  // namespace hixl_test
