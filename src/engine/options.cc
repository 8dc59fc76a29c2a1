#include "engine/options.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "transport/registry.h"
#include "wire/frame.h"

namespace hixl {
namespace {

using json = nlohmann::json;

// Non-negative decimal integer, no sign or spaces, at most 18 digits.
bool ParseUint(const std::string &text, uint64_t *value) {
  if (text.empty() || text.size() > 18) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *value = v;
  return true;
}

// Plain decimal: digits with at most one '.', nothing else (no sign, spaces,
// exponents or hex), as in "0.8" or "1".
bool ParseDouble(const std::string &text, double *value) {
  size_t digits = 0, dots = 0;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      ++digits;
    } else if (c == '.') {
      ++dots;
    } else {
      return false;
    }
  }
  if (digits == 0 || dots > 1) return false;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return false;
  *value = v;
  return true;
}

// An integer field of GlobalResourceConfig: a JSON integer or a numeric string.
bool JsonUint(const json &v, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t x = 0;
  if (v.is_number_unsigned()) {
    x = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    if (v.get<int64_t>() < 0) return false;
    x = static_cast<uint64_t>(v.get<int64_t>());
  } else if (v.is_number_float()) {
    // 2.0 is a JSON number with an integer value: fine. 2.5 is not.
    double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || d > 1e18 || d != std::floor(d)) return false;
    x = static_cast<uint64_t>(d);
  } else if (v.is_string()) {
    if (!ParseUint(v.get<std::string>(), &x)) return false;
  } else {
    return false;
  }
  if (x < lo || x > hi) return false;
  *out = x;
  return true;
}

bool JsonDouble(const json &v, double *out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return std::isfinite(*out);
  }
  return v.is_string() && ParseDouble(v.get<std::string>(), out);
}

bool ValidProtocolDesc(const std::string &desc) {
  size_t colon = desc.find(':');
  if (colon == std::string::npos) return false;
  std::string protocol = desc.substr(0, colon);
  std::string placement = desc.substr(colon + 1);
  return Transports().Knows(protocol) && (placement == "host" || placement == "device");
}

std::string KnownProtocols() {
  std::string out;
  for (const auto &t : Transports().All()) {
    out += (out.empty() ? "" : "|") + t.name;
    for (const auto &a : t.aliases) out += "|" + a;
  }
  return out;
}

// A JSON value in a reason: a scalar as written (at most 64 characters), a
// container by its kind and size. Never a container's dump(): it recurses,
// and a value nested 100000 deep overflowed the stack.
std::string Shown(const json &v) {
  if (v.is_array()) return "[array of " + std::to_string(v.size()) + "]";
  if (v.is_object()) return "{object of " + std::to_string(v.size()) + "}";
  return LogSafe(v.dump(), 64);
}

Status Invalid(std::string *why, const std::string &text) {
  *why = text;
  return PARAM_INVALID;
}

// A field that is either absent or valid; the value is stored on success.
Status UintField(const json &cfg, const char *key, uint64_t lo, uint64_t hi, uint32_t *out, std::string *why) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return SUCCESS;
  uint64_t v = 0;
  if (!JsonUint(*it, lo, hi, &v)) {
    return Invalid(why, std::string("GlobalResourceConfig: ") + key + "=" + Shown(*it) + " is not an integer in " +
                            std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = static_cast<uint32_t>(v);
  return SUCCESS;
}

Status ParseGlobalResourceConfig(const std::string &text, EngineOptions *out, std::string *why) {
  json cfg;
  try {
    cfg = json::parse(text);
  } catch (const std::exception &e) {
    return Invalid(why, "GlobalResourceConfig is not JSON (" + std::string(e.what()) + "): '" + text + "'");
  }
  if (!cfg.is_object()) return Invalid(why, "GlobalResourceConfig is not a JSON object: '" + text + "'");

  static const char *const kKnown[] = {
      "connect_pool.thread_num",      "connect_pool.task_queue_capacity",   "channel_pool.max_channel",
      "channel_pool.high_waterline",  "channel_pool.low_waterline",         "comm_resource_config.protocol_desc",
      "comm_resource_config.listen_port", "tcp.io_threads",
      "max_regions",                  "heartbeat.interval_ms",              "async_transfer.timeout_ms",
      "auth.key_file"};
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    bool known = false;
    for (const char *k : kKnown) known = known || it.key() == k;
    if (known) continue;
    // A transport's own field: the transport checks it.
    const size_t dot = it.key().find('.');
    TransportInfo info;
    // ("tcp." names no field: an unknown key like any other.)
    if (dot != std::string::npos && dot > 0 && dot + 1 < it.key().size() &&
        Transports().Find(it.key().substr(0, dot), &info)) {
      out->transport_config[info.name][it.key().substr(dot + 1)] =
          it->is_string() ? it->get<std::string>() : it->dump();
      continue;
    }
    HIXL_LOGW("GlobalResourceConfig: unknown field '%s' ignored", it.key().c_str());
  }

  Status s = SUCCESS;
  if ((s = UintField(cfg, "connect_pool.thread_num", 1, 64, &out->connect_pool_threads, why)) != SUCCESS) return s;
  if ((s = UintField(cfg, "connect_pool.task_queue_capacity", 1, 65535, &out->connect_pool_queue, why)) != SUCCESS) {
    return s;
  }
  if ((s = UintField(cfg, "channel_pool.max_channel", 1, 512, &out->max_channel, why)) != SUCCESS) return s;
  if ((s = UintField(cfg, "tcp.io_threads", 1, 64, &out->io_threads, why)) != SUCCESS) return s;
  if ((s = UintField(cfg, "max_regions", 256, wire::kMaxRegions, &out->max_regions, why)) != SUCCESS) return s;
  if ((s = UintField(cfg, "heartbeat.interval_ms", 0, 3600000, &out->heartbeat_ms, why)) != SUCCESS) return s;
  if (out->heartbeat_ms != 0 && out->heartbeat_ms < 100) {
    return Invalid(why, "GlobalResourceConfig: heartbeat.interval_ms=" + std::to_string(out->heartbeat_ms) +
                            " must be 0 (off) or 100..3600000");
  }
  if ((s = UintField(cfg, "async_transfer.timeout_ms", 1, 86400000, &out->async_timeout_ms, why)) != SUCCESS) {
    return s;
  }

  auto high = cfg.find("channel_pool.high_waterline");
  auto low = cfg.find("channel_pool.low_waterline");
  if ((high == cfg.end()) != (low == cfg.end())) {
    return Invalid(why, "GlobalResourceConfig: channel_pool.high_waterline and channel_pool.low_waterline must be "
                        "given together");
  }
  if (high != cfg.end()) {
    double h = 0, l = 0;
    if (!JsonDouble(*high, &h) || !JsonDouble(*low, &l) || !(l > 0) || !(l < h) || !(h < 1)) {
      return Invalid(why, "GlobalResourceConfig: waterlines high=" + Shown(*high) + " low=" + Shown(*low) +
                              " must satisfy 0 < low < high < 1");
    }
    out->has_waterlines = true;
    out->high_waterline = h;
    out->low_waterline = l;
  }

  auto proto = cfg.find("comm_resource_config.protocol_desc");
  if (proto != cfg.end()) {
    std::vector<std::string> list;
    if (proto->is_string()) {
      list.push_back(proto->get<std::string>());
    } else if (proto->is_array() && !proto->empty()) {
      for (const auto &e : *proto) {
        if (!e.is_string()) return Invalid(why, "GlobalResourceConfig: protocol_desc entry " + Shown(e) + " is not a string");
        list.push_back(e.get<std::string>());
      }
    } else {
      return Invalid(why, "GlobalResourceConfig: protocol_desc=" + Shown(*proto) +
                              " is not a string or a non-empty array of strings");
    }
    for (const auto &d : list) {
      if (!ValidProtocolDesc(d)) {
        return Invalid(why, "GlobalResourceConfig: protocol_desc entry '" + d +
                                "' is not protocol:placement (protocol " + KnownProtocols() +
                                ", placement host|device)");
      }
    }
    out->protocols = list;
  }

  auto key_file = cfg.find("auth.key_file");
  if (key_file != cfg.end()) {
    if (!key_file->is_string() || key_file->get<std::string>().empty()) {
      return Invalid(why, "GlobalResourceConfig: auth.key_file=" + Shown(*key_file) + " is not a file path");
    }
    out->auth_key_file = key_file->get<std::string>();  // read (and checked) when the engine starts
  }

  auto port = cfg.find("comm_resource_config.listen_port");
  if (port != cfg.end()) {
    uint64_t v = 0;
    if (!JsonUint(*port, 0, 65535, &v)) {
      return Invalid(why, "GlobalResourceConfig: comm_resource_config.listen_port=" + Shown(*port) +
                              " is not a port in 0..65535");
    }
    out->listen_port = static_cast<int32_t>(v);
  }
  return SUCCESS;
}

Status ParseBufferPool(const std::string &text, EngineOptions *out, std::string *why) {
  size_t colon = text.find(':');
  uint64_t n = 0, s = 0;
  if (colon == std::string::npos || !ParseUint(text.substr(0, colon), &n) || !ParseUint(text.substr(colon + 1), &s)) {
    return Invalid(why, "BufferPool='" + text + "' is not N:S (N buffers of S MiB)");
  }
  if ((n == 0) != (s == 0) || n > 1024 || s > 1024) {
    return Invalid(why, "BufferPool='" + text + "': N and S must both be 0 (off) or in 1..1024");
  }
  out->buffer_pool_count = static_cast<uint32_t>(n);
  out->buffer_pool_mib = static_cast<uint32_t>(s);
  return SUCCESS;
}

Status ParseRange(const std::string &key, const std::string &text, uint64_t lo, uint64_t hi, uint32_t *out,
                  std::string *why) {
  uint64_t v = 0;
  if (!ParseUint(text, &v) || v < lo || v > hi) {
    return Invalid(why, key + "='" + text + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = static_cast<uint32_t>(v);
  return SUCCESS;
}

}  // namespace

uint32_t DefaultIoThreads() {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<uint32_t>(std::clamp<long>(cores / 2, 1, 4));
}


Status ParseEngineOptions(const std::map<std::string, std::string> &options, EngineOptions *out, std::string *why) {
  EngineOptions opts;
  bool fabric = false;
  for (const auto &[key, value] : options) {
    Status s = SUCCESS;
    if (key == OPTION_BUFFER_POOL) {
      s = ParseBufferPool(value, &opts, why);
    } else if (key == OPTION_AUTO_CONNECT) {
      if (value != "0" && value != "1") s = Invalid(why, "AutoConnect='" + value + "' is not 0 or 1");
      opts.auto_connect = value == "1";
    } else if (key == OPTION_RDMA_TRAFFIC_CLASS) {
      s = ParseRange(key, value, 0, 255, &opts.rdma_traffic_class, why);
      if (s == SUCCESS && opts.rdma_traffic_class % 4 != 0) {
        s = Invalid(why, "RdmaTrafficClass='" + value + "' is not a multiple of 4");
      }
    } else if (key == OPTION_RDMA_SERVICE_LEVEL) {
      s = ParseRange(key, value, 0, 7, &opts.rdma_service_level, why);
    } else if (key == OPTION_ENABLE_USE_FABRIC_MEM) {
      if (value != "0" && value != "1") s = Invalid(why, "EnableUseFabricMem='" + value + "' is not 0 or 1");
      fabric = value == "1";
    } else if (key == OPTION_GLOBAL_RESOURCE_CONFIG) {
      s = ParseGlobalResourceConfig(value, &opts, why);
    } else if (key == OPTION_LOCAL_COMM_RES) {
      if (!value.empty()) {
        if (!nlohmann::json::accept(value)) s = Invalid(why, "LocalCommRes is not JSON: '" + value + "'");
      }
      opts.local_comm_res = value;
    } else {
      HIXL_LOGW("Initialize: unknown option '%s'='%s' ignored", key.c_str(), value.c_str());
    }
    if (s != SUCCESS) return s;
  }
  if (fabric) {
    if (options.count(OPTION_BUFFER_POOL) != 0) {
      return Invalid(why, "EnableUseFabricMem=1 cannot be combined with BufferPool");
    }
    *why = "EnableUseFabricMem=1 is an Ascend-only mode";
    return UNSUPPORTED;
  }
  *out = opts;
  return SUCCESS;
}

}  // namespace hixl
