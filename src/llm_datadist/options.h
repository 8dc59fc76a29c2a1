// options.h: LlmDataDist's Initialize options, checked, and the hixl engine
// options they become.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {

// Keys LLM-DataDist's Python package passes that the public header does not name.
constexpr const char kOptionLinkTotalTime[] = "llm.LinkTotalTime";
constexpr const char kOptionLinkRetryCount[] = "llm.LinkRetryCount";
constexpr const char kOptionRdmaTrafficClass[] = "llm.RdmaTrafficClass";
constexpr const char kOptionRdmaServiceLevel[] = "llm.RdmaServiceLevel";

struct DataDistOptions {
  std::string listen;  // hixl local_engine ("ip:port"); empty: a client
  int32_t device_id = 0;
  int32_t sync_timeout_ms = 1000;  // llm.SyncKvCacheWaitTime
  // llm.TransferBackend is "hixl": the rules of LLM-DataDist's hixl backend
  // (SetRole keeps the listen address; no rank-table Link). Otherwise those
  // of its default backend.
  bool hixl_backend = false;
  int64_t link_total_ms = 0;  // llm.LinkTotalTime (seconds) in ms; 0: not set
  std::map<AscendString, AscendString> hixl;  // options for hixl::Hixl::Initialize
};

// LLM_PARAM_INVALID (logged, naming the key) for a missing llm.DeviceId or
// a bad value; LLM_FEATURE_NOT_ENABLED for a transfer backend other than hixl.
Status ParseOptions(const std::map<AscendString, AscendString> &options, DataDistOptions *out);

// How long Link waits for every member: llm.LinkTotalTime, else
// HCCL_CONNECT_TIMEOUT (seconds) from the environment, else 120 s (as
// LLM-DataDist, whose link is HCCL's).
int32_t LinkTimeoutMs(const DataDistOptions &opts);

// "ip:port" (or "[ipv6]:port") as a hixl engine name; false if malformed.
bool ParseListen(const std::string &text, std::string *engine);

// An engine name for ip and port; ip may be IPv6 (bracketed here).
std::string EngineName(const std::string &ip, uint16_t port);

}  // namespace llm_datadist
