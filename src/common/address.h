// address.h: engine addresses, "ipv4:port", "ipv4", "[ipv6]:port", "[ipv6]".
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace hixl {

struct EngineAddress {
  int family = AF_UNSPEC;  // AF_INET or AF_INET6
  std::string ip;          // canonical text form, without brackets
  uint16_t port = 0;
  bool has_port = false;   // a port was written (it may be 0)

  // Canonical text: "1.2.3.4:80", "[::1]:80", "1.2.3.4", "[::1]".
  std::string ToString() const;
  // Fills a sockaddr for bind/connect; returns its length.
  socklen_t ToSockaddr(sockaddr_storage *out) const;
};

// Parses `text` into `out`. On failure returns false and puts the reason in
// `why` (never logs: callers decide how loud a bad address is).
bool ParseEngineAddress(const std::string &text, EngineAddress *out, std::string *why);

// The address of a connected or bound socket, as an EngineAddress.
bool SockaddrToAddress(const sockaddr *sa, EngineAddress *out);

}  // namespace hixl
