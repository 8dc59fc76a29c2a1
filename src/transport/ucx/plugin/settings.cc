#include "transport/ucx/plugin/settings.h"

#include <cstdlib>
#include <sstream>

#include "transport/ucx/plugin/plugin_log.h"
#include "transport/ucx/plugin/status.h"

namespace hixl::ucx_plugin {
namespace {

std::string Bare(const char *name) {
  std::string s = name;
  if (s.rfind("UCX_", 0) == 0) s.erase(0, 4);
  return s;
}

const char *FromEnv(const std::string &name) { return std::getenv(("UCX_" + name).c_str()); }

// Adds name=value unless the environment has UCX_<name> (then says so once).
void Add(std::vector<UcxSetting> *plan, const std::string &name, const std::string &value) {
  if (const char *env = FromEnv(name)) {
    UCXP_LOGI("UCX_%s=%s from the environment wins over hixl's %s", name.c_str(), env, value.c_str());
    return;
  }
  plan->push_back({name, value});
}

}  // namespace

bool TlsMayUseSharedMemory(const std::string &tls) {
  static const char *const kShm[] = {"all", "sm", "shm", "mm", "posix", "sysv", "xpmem"};
  bool negated = !tls.empty() && tls[0] == '^';
  std::stringstream in(negated ? tls.substr(1) : tls);
  std::string tl;
  bool named = false;
  while (std::getline(in, tl, ',')) {
    if (!tl.empty() && tl[0] == '\\') tl.erase(0, 1);
    for (const char *s : kShm) {
      // "all" never switches shared memory off, even in a negated list.
      if (tl == s && !(negated && tl == "all")) named = true;
    }
  }
  return negated ? !named : named || tls.empty();
}

bool WantsRdmaSettings(const hixl_ucx_context_params_t &params) {
  return params.traffic_class >= 0 || params.service_level >= 0;
}

hixl_ucx_status_t PlanSettings(const hixl_ucx_context_params_t &params, bool rdma_present,
                               std::vector<UcxSetting> *plan) {
  plan->clear();
  if (params.traffic_class > 255 || params.service_level > 15) {
    UCXP_LOGE("IB traffic class %d (0..255) or service level %d (0..15) out of range", params.traffic_class,
              params.service_level);
    return HIXL_UCX_ERR_INVALID;
  }
  if (params.num_settings > 0 && params.settings == nullptr) {
    UCXP_LOGE("%zu UCX settings but no array", params.num_settings);
    return HIXL_UCX_ERR_INVALID;
  }
  if (params.tls != nullptr) Add(plan, "TLS", params.tls);
  if (params.net_devices != nullptr) Add(plan, "NET_DEVICES", params.net_devices);
  if (rdma_present) {
    if (params.traffic_class >= 0) Add(plan, "IB_TRAFFIC_CLASS", std::to_string(params.traffic_class));
    if (params.service_level >= 0) Add(plan, "IB_SL", std::to_string(params.service_level));
  } else if (WantsRdmaSettings(params)) {
    UCXP_LOGD("no RDMA device: the IB traffic class and service level are not applied");
  }
  std::vector<UcxSetting> extra;
  for (size_t i = 0; i < params.num_settings; ++i) {
    const hixl_ucx_setting_t &s = params.settings[i];
    if (s.name == nullptr || s.value == nullptr || Bare(s.name).empty()) {
      UCXP_LOGE("UCX setting %zu has no name or no value", i);
      return HIXL_UCX_ERR_INVALID;
    }
    extra.push_back({Bare(s.name), s.value});
  }
  // The transports in effect decide whether shared memory needs the flag.
  std::string tls = "all";
  for (const auto &s : *plan) tls = s.name == "TLS" ? s.value : tls;
  for (const auto &s : extra) tls = s.name == "TLS" ? s.value : tls;
  if (const char *env = FromEnv("TLS")) tls = env;
  if (TlsMayUseSharedMemory(tls)) Add(plan, "MM_ERROR_HANDLING", "y");
  for (const auto &s : extra) Add(plan, s.name, s.value);
  return HIXL_UCX_OK;
}

hixl_ucx_status_t MakeConfig(const std::vector<UcxSetting> &plan, ucp_config_t **out) {
  ucp_config_t *config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) {
    UCXP_LOGE("reading UCX's configuration failed: %s", ucs_status_string(st));
    return FromUcs(st);
  }
  for (const auto &s : plan) {
    st = ucp_config_modify(config, s.name.c_str(), s.value.c_str());
    if (st != UCS_OK) {
      UCXP_LOGE("UCX setting %s=%s refused: %s", s.name.c_str(), s.value.c_str(), ucs_status_string(st));
      ucp_config_release(config);
      return HIXL_UCX_ERR_INVALID;
    }
    UCXP_LOGD("UCX setting %s=%s", s.name.c_str(), s.value.c_str());
  }
  *out = config;
  return HIXL_UCX_OK;
}

}  // namespace hixl::ucx_plugin
