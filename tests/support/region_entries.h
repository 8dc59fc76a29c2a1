// region_entries.h: host-memory region-table entries from bare ranges, for
// tests of the tables (RemoteRegions::Replace takes whole entries).
#pragma once

#include <initializer_list>
#include <vector>

#include "wire/messages.h"

namespace hixl_test {

inline std::vector<hixl::wire::RegionEntry> HostEntries(std::initializer_list<hixl::wire::RegionInfo> ranges) {
  std::vector<hixl::wire::RegionEntry> out;
  for (const auto &r : ranges) {
    hixl::wire::RegionEntry e;
    e.range = r;
    out.push_back(e);
  }
  return out;
}

inline std::vector<hixl::wire::RegionEntry> HostEntries(const std::vector<hixl::wire::RegionInfo> &ranges) {
  std::vector<hixl::wire::RegionEntry> out;
  for (const auto &r : ranges) {
    hixl::wire::RegionEntry e;
    e.range = r;
    out.push_back(e);
  }
  return out;
}

// A whole table as one page (what a target's HELLO_ACK carries).
inline hixl::wire::RegionPage HostPage(const std::vector<hixl::wire::RegionInfo> &ranges) {
  hixl::wire::RegionPage page;
  page.entries = HostEntries(ranges);
  page.total = page.count = static_cast<uint32_t>(ranges.size());
  return page;
}

}  // namespace hixl_test
