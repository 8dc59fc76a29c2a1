#include "integration/fixture.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace hixl_test {
namespace {

// The UCX plug-in built with the tests: this binary has libhixl built in,
// so the loader would look for it next to the binary.
#ifdef HIXL_UCX_PLUGIN_PATH
[[maybe_unused]] const bool kPluginSet = setenv("HIXL_UCX_PLUGIN", HIXL_UCX_PLUGIN_PATH, 0) == 0;
#endif

void AddUcxSettings(const Net &net, nlohmann::json *cfg) {
  if (net.ucx_tls == nullptr) return;
  (*cfg)["ucx.tls"] = net.ucx_tls;
  if (std::string(net.ucx_tls) == "tcp") (*cfg)["ucx.net_devices"] = "lo";  // loopback only
}

}  // namespace

std::map<hixl::AscendString, hixl::AscendString> WithNet(std::map<hixl::AscendString, hixl::AscendString> options,
                                                         const Net &net) {
  options = WithTransport(std::move(options), net.transport);
  nlohmann::json cfg = nlohmann::json::parse(options[hixl::OPTION_GLOBAL_RESOURCE_CONFIG].GetString());
  AddUcxSettings(net, &cfg);
  options[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = cfg.dump().c_str();
  return options;
}

std::string PeerConfigFor(const std::string &json, const Net &net) {
  if (std::string(net.transport) != "ucx") return json;
  nlohmann::json cfg = json.empty() ? nlohmann::json::object() : nlohmann::json::parse(json);
  if (!cfg.contains("comm_resource_config.protocol_desc")) {
    cfg["comm_resource_config.protocol_desc"] = nlohmann::json::array({"ucx:host", "tcp:host"});
  }
  AddUcxSettings(net, &cfg);
  return cfg.dump();
}

std::map<hixl::AscendString, hixl::AscendString> WithTransport(std::map<hixl::AscendString, hixl::AscendString> options,
                                                               const std::string &transport) {
  nlohmann::json cfg = nlohmann::json::object();
  auto it = options.find(hixl::OPTION_GLOBAL_RESOURCE_CONFIG);
  if (it != options.end()) cfg = nlohmann::json::parse(it->second.GetString());
  cfg["comm_resource_config.protocol_desc"] = nlohmann::json::array({transport + ":host"});
  options[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = cfg.dump().c_str();
  return options;
}

}  // namespace hixl_test
