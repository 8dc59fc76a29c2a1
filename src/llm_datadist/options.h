// options.h: LlmDataDist's Initialize options, checked, and the hixl engine
// options they become.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {

struct DataDistOptions {
  std::string listen;  // hixl local_engine ("ip:port"); empty: a client
  int32_t device_id = 0;
  int32_t sync_timeout_ms = 1000;  // llm.SyncKvCacheWaitTime
  std::map<AscendString, AscendString> hixl;  // options for hixl::Hixl::Initialize
};

// LLM_PARAM_INVALID (logged, naming the key) for a missing llm.DeviceId or
// a bad value; LLM_FEATURE_NOT_ENABLED for a transfer backend other than hixl.
Status ParseOptions(const std::map<AscendString, AscendString> &options, DataDistOptions *out);

// "ip:port" (or "[ipv6]:port") as a hixl engine name; false if malformed.
bool ParseListen(const std::string &text, std::string *engine);

// An engine name for ip and port; ip may be IPv6 (bracketed here).
std::string EngineName(const std::string &ip, uint16_t port);

}  // namespace llm_datadist
