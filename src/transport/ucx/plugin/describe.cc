#include "transport/ucx/plugin/describe.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace hixl::ucx_plugin {
namespace {

void Append(std::vector<std::string> *out, const std::string &s) {
  for (const auto &x : *out) {
    if (x == s) return;
  }
  out->push_back(s);
}

std::string Join(const std::vector<std::string> &parts) {
  std::string out;
  for (const auto &p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

bool CancelWaitsForPeer(const std::string &description) {
  return description.find("sysv/") != std::string::npos || description.find("posix/") != std::string::npos;
}

std::string LanesOfPrintInfo(const std::string &text) {
  // UCX 1.13 prints, per lane:
  //   lane[0]:  2:tcp/lo.0 md[1]  -> md[1]/tcp/sysdev[255] am am_bw#0 keepalive wireup
  std::vector<std::string> lanes;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find("lane[");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(line.find(':', at) + 1));
    std::string resource, word, roles;
    words >> resource;  // "2:tcp/lo.0"
    resource = resource.substr(resource.find(':') + 1);
    bool after_arrow = false, after_remote = false;
    while (words >> word) {
      if (after_remote) roles += (roles.empty() ? "" : " ") + word;
      if (after_arrow) after_remote = true;
      if (word == "->") after_arrow = true;
    }
    Append(&lanes, roles.empty() ? resource : resource + " (" + roles + ")");
  }
  return Join(lanes);
}

std::string DescribeTransports(ucp_ep_h ep) {
#ifdef HIXL_UCX_HAVE_EP_TRANSPORTS
  // UCX 1.14 and later name them directly.
  ucp_transport_entry_t entries[32];
  ucp_ep_attr_t attr{};
  attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
  attr.transports.entries = entries;
  attr.transports.num_entries = 32;
  attr.transports.entry_size = sizeof(ucp_transport_entry_t);
  if (ucp_ep_query(ep, &attr) == UCS_OK) {
    std::vector<std::string> names;
    for (unsigned i = 0; i < attr.transports.num_entries; ++i) {
      Append(&names, std::string(entries[i].transport_name) + "/" + entries[i].device_name);
    }
    if (!names.empty()) return Join(names);
  }
#endif
  char *buf = nullptr;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  if (f == nullptr) return "(unknown)";
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::string text(buf, size);
  std::free(buf);
  std::string lanes = LanesOfPrintInfo(text);
  return lanes.empty() ? "(unknown)" : lanes;
}

}  // namespace hixl::ucx_plugin
