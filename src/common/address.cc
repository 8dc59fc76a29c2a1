#include "common/address.h"

#include <arpa/inet.h>

#include <cstring>

namespace hixl {
namespace {

// Decimal port: 1..5 digits, value <= 65535. No sign, no spaces.
bool ParsePort(const std::string &text, uint16_t *port, std::string *why) {
  if (text.empty()) {
    *why = "empty port after ':'";
    return false;
  }
  if (text.size() > 5) {
    *why = "port '" + text + "' is out of range 0..65535";
    return false;
  }
  uint32_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      *why = "port '" + text + "' is not a decimal number";
      return false;
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) {
    *why = "port " + text + " is out of range 0..65535";
    return false;
  }
  *port = static_cast<uint16_t>(value);
  return true;
}

bool CanonicalIp(int family, const std::string &ip, std::string *canonical) {
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(family, ip.c_str(), buf) != 1) return false;
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(family, buf, text, sizeof(text)) == nullptr) return false;
  *canonical = text;
  return true;
}

}  // namespace

std::string EngineAddress::ToString() const {
  std::string host = family == AF_INET6 ? "[" + ip + "]" : ip;
  return has_port ? host + ":" + std::to_string(port) : host;
}

socklen_t EngineAddress::ToSockaddr(sockaddr_storage *out) const {
  std::memset(out, 0, sizeof(*out));
  if (family == AF_INET6) {
    auto *sin6 = reinterpret_cast<sockaddr_in6 *>(out);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    inet_pton(AF_INET6, ip.c_str(), &sin6->sin6_addr);
    return sizeof(sockaddr_in6);
  }
  auto *sin = reinterpret_cast<sockaddr_in *>(out);
  sin->sin_family = AF_INET;
  sin->sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &sin->sin_addr);
  return sizeof(sockaddr_in);
}

bool ParseEngineAddress(const std::string &text, EngineAddress *out, std::string *why) {
  EngineAddress addr;
  std::string host;
  std::string port_text;
  if (text.empty()) {
    *why = "empty address";
    return false;
  }
  if (text.find_first_of(" \t\r\n") != std::string::npos || text.find('\0') != std::string::npos) {
    *why = "address '" + text + "' contains white space or NUL";
    return false;
  }
  if (text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) {
      *why = "address '" + text + "' has '[' without ']'";
      return false;
    }
    host = text.substr(1, close - 1);
    std::string rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        *why = "address '" + text + "' has '" + rest + "' after ']' (expected ':port')";
        return false;
      }
      port_text = rest.substr(1);
      addr.has_port = true;
    }
    addr.family = AF_INET6;
    if (!CanonicalIp(AF_INET6, host, &addr.ip)) {
      *why = "'" + host + "' in '" + text + "' is not an IPv6 address";
      return false;
    }
  } else {
    size_t colon = text.find(':');
    if (colon != std::string::npos && text.find(':', colon + 1) != std::string::npos) {
      *why = "address '" + text + "' looks like IPv6; write it as [addr] or [addr]:port";
      return false;
    }
    host = text.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = text.substr(colon + 1);
      addr.has_port = true;
    }
    addr.family = AF_INET;
    if (!CanonicalIp(AF_INET, host, &addr.ip)) {
      *why = "'" + host + "' in '" + text + "' is not an IPv4 address";
      return false;
    }
  }
  if (addr.has_port && !ParsePort(port_text, &addr.port, why)) {
    *why = "address '" + text + "': " + *why;
    return false;
  }
  *out = addr;
  return true;
}

bool SockaddrToAddress(const sockaddr *sa, EngineAddress *out) {
  char text[INET6_ADDRSTRLEN];
  if (sa->sa_family == AF_INET) {
    auto *sin = reinterpret_cast<const sockaddr_in *>(sa);
    if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text)) == nullptr) return false;
    out->port = ntohs(sin->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    auto *sin6 = reinterpret_cast<const sockaddr_in6 *>(sa);
    if (inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text)) == nullptr) return false;
    out->port = ntohs(sin6->sin6_port);
  } else {
    return false;
  }
  out->family = sa->sa_family;
  out->ip = text;
  out->has_port = true;
  return true;
}

}  // namespace hixl
