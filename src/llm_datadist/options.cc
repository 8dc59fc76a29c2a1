#include "options.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>

#include "llm_log.h"

namespace llm_datadist {
namespace {

std::string Str(const AscendString &s) { return std::string(s.GetString(), s.GetLength()); }

bool ParseInt(const std::string &text, int64_t lo, int64_t hi, int64_t *out) {
  if (text.empty() || text.size() > 20) return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

const char *Find(const std::map<AscendString, AscendString> &options, const char *key) {
  auto it = options.find(AscendString(key));
  return it == options.end() ? nullptr : it->second.GetString();
}

// The RDMA traffic class and service level, into out->hixl.
Status ParseRdmaClass(const std::map<AscendString, AscendString> &options, DataDistOptions *out) {
  // LLM-DataDist's default backend hands any uint32 to HCCL; its hixl backend
  // hands them to hixl, which takes a traffic class of 0-255 in steps of 4
  // and a service level of 0-7 (as this hixl does). The default backend's
  // values beyond that are accepted here and not applied: RDMA (ucx) keeps
  // its own, with a warning.
  struct Rdma {
    const char *key;
    const char *hixl_key;
    int64_t max;
    int64_t step;
  };
  static const Rdma kRdma[] = {{kOptionRdmaTrafficClass, hixl::OPTION_RDMA_TRAFFIC_CLASS, 255, 4},
                               {kOptionRdmaServiceLevel, hixl::OPTION_RDMA_SERVICE_LEVEL, 7, 1}};
  for (const Rdma &r : kRdma) {
    const char *value = Find(options, r.key);
    if (value == nullptr) continue;
    int64_t v = 0;
    if (!ParseInt(value, 0, UINT32_MAX, &v)) {
      LLM_LOGE("Initialize: option %s must be an integer in [0, 2^32-1] (it is \"%s\")", r.key, value);
      return LLM_PARAM_INVALID;
    }
    if (out->hixl_backend || (v <= r.max && v % r.step == 0)) {
      out->hixl[r.hixl_key] = value;
    } else {
      LLM_LOGW("Initialize: option %s=%s is accepted but not applied: hixl's RDMA transport takes 0-%" PRId64
               " in steps of %" PRId64 " and keeps its default",
               r.key, value, r.max, r.step);
    }
  }
  return LLM_SUCCESS;
}

}  // namespace

std::string EngineName(const std::string &ip, uint16_t port) {
  const bool v6 = ip.find(':') != std::string::npos && ip.front() != '[';
  return (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

bool ParseListen(const std::string &text, std::string *engine) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string ip = text.substr(0, colon);
  int64_t port = 0;
  if (!ParseInt(text.substr(colon + 1), 1, 65535, &port)) return false;
  if (ip.front() == '[') {
    if (ip.size() < 3 || ip.back() != ']') return false;
    ip = ip.substr(1, ip.size() - 2);
  }
  *engine = EngineName(ip, static_cast<uint16_t>(port));
  return true;
}

Status ParseOptions(const std::map<AscendString, AscendString> &options, DataDistOptions *out) {
  static const char *const kKnown[] = {OPTION_LISTEN_IP_INFO,   OPTION_DEVICE_ID,       OPTION_SYNC_CACHE_WAIT_TIME,
                                       OPTION_BUF_POOL_CFG,     OPTION_ENABLE_SET_ROLE, OPTION_LOCAL_COMM_RES,
                                       OPTION_TRANSFER_BACKEND, OPTION_GLOBAL_RESOURCE_CONFIG,
                                       kOptionRdmaTrafficClass, kOptionRdmaServiceLevel, kOptionLinkTotalTime,
                                       kOptionLinkRetryCount};
  for (const auto &kv : options) {
    bool known = false;
    for (const char *k : kKnown) known = known || Str(kv.first) == k;
    if (!known) LLM_LOGI("Initialize: option %s is not used by this implementation; ignored", kv.first.GetString());
  }
  int64_t v = 0;
  const char *dev = Find(options, OPTION_DEVICE_ID);
  if (dev == nullptr || !ParseInt(dev, 0, INT32_MAX, &v)) {
    LLM_LOGE("Initialize: option %s must be a device id >= 0 (it is %s)", OPTION_DEVICE_ID,
             dev == nullptr ? "missing" : dev);
    return LLM_PARAM_INVALID;
  }
  out->device_id = static_cast<int32_t>(v);
  if (const char *listen = Find(options, OPTION_LISTEN_IP_INFO)) {
    if (!ParseListen(listen, &out->listen)) {
      LLM_LOGE("Initialize: option %s must be \"ip:port\" with a port of 1-65535 (it is \"%s\")",
               OPTION_LISTEN_IP_INFO, listen);
      return LLM_PARAM_INVALID;
    }
  }
  if (const char *t = Find(options, OPTION_SYNC_CACHE_WAIT_TIME)) {
    if (!ParseInt(t, 1, INT32_MAX, &v)) {
      LLM_LOGE("Initialize: option %s must be a number of milliseconds > 0 (it is \"%s\")",
               OPTION_SYNC_CACHE_WAIT_TIME, t);
      return LLM_PARAM_INVALID;
    }
    out->sync_timeout_ms = static_cast<int32_t>(v);
  }
  if (const char *b = Find(options, OPTION_TRANSFER_BACKEND)) {
    if (std::string(b) != "hixl" && *b != '\0') {
      LLM_LOGE("Initialize: option %s is \"%s\"; this implementation has the \"hixl\" backend only",
               OPTION_TRANSFER_BACKEND, b);
      return LLM_FEATURE_NOT_ENABLED;
    }
    out->hixl_backend = *b != '\0';
  }
  if (const char *t = Find(options, kOptionLinkTotalTime)) {
    if (!ParseInt(t, 0, UINT32_MAX, &v)) {
      LLM_LOGE("Initialize: option %s must be a number of seconds in [0, 2^32-1] (it is \"%s\")",
               kOptionLinkTotalTime, t);
      return LLM_PARAM_INVALID;
    }
    out->link_total_ms = v * 1000;
  }
  if (const char *c = Find(options, kOptionLinkRetryCount)) {
    // Links are retried until llm.LinkTotalTime runs out; the count is checked as LLM-DataDist does.
    if (!ParseInt(c, 1, 100, &v)) {
      LLM_LOGE("Initialize: option %s must be an integer in [1, 100] (it is \"%s\")", kOptionLinkRetryCount, c);
      return LLM_PARAM_INVALID;
    }
  }
  if (const char *r = Find(options, OPTION_ENABLE_SET_ROLE)) {
    if (std::string(r) != "0" && std::string(r) != "1") {
      LLM_LOGE("Initialize: option %s must be \"0\" or \"1\" (it is \"%s\")", OPTION_ENABLE_SET_ROLE, r);
      return LLM_PARAM_INVALID;
    }
  }
  if (Find(options, OPTION_BUF_POOL_CFG) != nullptr) {
    LLM_LOGI("Initialize: option %s configures Ascend staging buffers; hixl needs none here", OPTION_BUF_POOL_CFG);
  }
  // Passed on to hixl, which checks them (LLM-DataDist's hixl backend does the same).
  static const std::pair<const char *, const char *> kToHixl[] = {
      {OPTION_GLOBAL_RESOURCE_CONFIG, hixl::OPTION_GLOBAL_RESOURCE_CONFIG},
      {OPTION_LOCAL_COMM_RES, hixl::OPTION_LOCAL_COMM_RES},
  };
  // Every cache is registered memory: no staging buffers (as LLM-DataDist's hixl backend).
  out->hixl[hixl::OPTION_BUFFER_POOL] = "0:0";
  for (const auto &m : kToHixl) {
    if (const char *value = Find(options, m.first)) out->hixl[m.second] = value;
  }
  return ParseRdmaClass(options, out);
}

int32_t LinkTimeoutMs(const DataDistOptions &opts) {
  constexpr int64_t kDefaultMs = 120000;
  int64_t ms = opts.link_total_ms;
  if (ms <= 0) {
    const char *env = std::getenv("HCCL_CONNECT_TIMEOUT");
    int64_t seconds = 0;
    ms = env != nullptr && ParseInt(env, 1, INT32_MAX, &seconds) ? seconds * 1000 : kDefaultMs;
  }
  return static_cast<int32_t>(std::min<int64_t>(ms, INT32_MAX));
}

}  // namespace llm_datadist
