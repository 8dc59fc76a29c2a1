// rank_table.h: the addresses of a Link's members, from a rank table in
// HCCL's JSON (what LLM-DataDist's link takes):
//
//   {"server_list": [{"device": [{"device_id": "0", "device_ip": "10.0.0.1",
//                                 "rank_id": "0", "device_port": "16666"}, ...],
//                     "server_id": "..."}, ...], "version": "1.0", ...}
//
// A rank's member listens at its device_ip and device_port (a string or a
// number; kDefaultRankPort without one). Other fields are not used.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace llm_datadist {

constexpr uint16_t kDefaultRankPort = 16666;

// The engine name ("ip:port", IPv6 bracketed) of each rank in `ranks`.
// false, with *why, for a table that is not such JSON, a rank it lists
// twice or lacks, or an address or port that is malformed.
bool RankAddresses(const std::string &rank_table, const std::set<uint32_t> &ranks,
                   std::map<uint32_t, std::string> *engines, std::string *why);

}  // namespace llm_datadist
