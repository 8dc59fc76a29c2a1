#include "rank_table.h"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include "options.h"

namespace llm_datadist {
namespace {

using nlohmann::json;

// A number given as a JSON string ("0") or number (0), in [0, max].
bool Number(const json &v, uint64_t max, uint64_t *out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *out = std::stoull(s);
  } else {
    return false;
  }
  return *out <= max;
}

bool IpAddress(const std::string &ip) {
  unsigned char buf[16];
  return inet_pton(AF_INET, ip.c_str(), buf) == 1 || inet_pton(AF_INET6, ip.c_str(), buf) == 1;
}

}  // namespace

bool RankAddresses(const std::string &rank_table, const std::set<uint32_t> &ranks,
                   std::map<uint32_t, std::string> *engines, std::string *why) {
  json table = json::parse(rank_table, nullptr, /*allow_exceptions=*/false);
  if (table.is_discarded() || !table.is_object()) {
    *why = "the rank table is not a JSON object";
    return false;
  }
  auto servers = table.find("server_list");
  if (servers == table.end() || !servers->is_array()) {
    *why = "the rank table has no server_list array";
    return false;
  }
  std::map<uint32_t, std::string> found;
  for (const json &server : *servers) {
    auto devices = server.is_object() ? server.find("device") : server.end();
    if (!server.is_object() || devices == server.end() || !devices->is_array()) {
      *why = "a server of server_list has no device array";
      return false;
    }
    for (const json &dev : *devices) {
      uint64_t rank = 0;
      auto r = dev.is_object() ? dev.find("rank_id") : dev.end();
      if (!dev.is_object() || r == dev.end() || !Number(*r, UINT32_MAX, &rank)) {
        *why = "a device has no rank_id (a number, or a string of one)";
        return false;
      }
      if (ranks.count(static_cast<uint32_t>(rank)) == 0) continue;
      auto ip = dev.find("device_ip");
      if (ip == dev.end() || !ip->is_string() || !IpAddress(ip->get<std::string>())) {
        *why = "rank " + std::to_string(rank) + " has no device_ip that is an IPv4 or IPv6 address";
        return false;
      }
      uint64_t port = kDefaultRankPort;
      auto p = dev.find("device_port");
      if (p != dev.end() && (!Number(*p, 65535, &port) || port == 0)) {
        *why = "rank " + std::to_string(rank) + " has a device_port that is not a port (1-65535)";
        return false;
      }
      if (!found.emplace(static_cast<uint32_t>(rank), EngineName(ip->get<std::string>(), static_cast<uint16_t>(port)))
               .second) {
        *why = "rank " + std::to_string(rank) + " is listed twice";
        return false;
      }
    }
  }
  for (uint32_t rank : ranks) {
    if (found.count(rank) == 0) {
      *why = "rank " + std::to_string(rank) + " is not in the rank table";
      return false;
    }
  }
  *engines = std::move(found);
  return true;
}

}  // namespace llm_datadist
