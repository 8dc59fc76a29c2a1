#include "integration/fixture.h"

#include <nlohmann/json.hpp>

namespace hixl_test {

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
