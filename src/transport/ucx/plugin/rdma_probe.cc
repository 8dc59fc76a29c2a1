#include "transport/ucx/plugin/rdma_probe.h"

#include <uct/api/uct.h>

#include <algorithm>
#include <cstring>

#include "transport/ucx/plugin/plugin_log.h"
#include "transport/ucx/plugin/status.h"

namespace hixl::ucx_plugin {
namespace {

// Adds the RDMA devices of one memory domain.
void AddDevicesOf(uct_component_h component, const char *md_name, std::vector<std::string> *names) {
  uct_md_config_t *config = nullptr;
  ucs_status_t st = uct_md_config_read(component, nullptr, nullptr, &config);
  if (st != UCS_OK) {
    UCXP_LOGD("UCX memory domain %s: reading its configuration failed: %s", md_name, ucs_status_string(st));
    return;
  }
  uct_md_h md = nullptr;
  st = uct_md_open(component, md_name, config, &md);
  uct_config_release(config);
  if (st != UCS_OK) {
    UCXP_LOGD("UCX memory domain %s: opening it failed: %s", md_name, ucs_status_string(st));
    return;
  }
  uct_tl_resource_desc_t *resources = nullptr;
  unsigned count = 0;
  st = uct_md_query_tl_resources(md, &resources, &count);
  if (st == UCS_OK) {
    for (unsigned i = 0; i < count; ++i) {
      const uct_tl_resource_desc_t &r = resources[i];
      if (r.dev_type != UCT_DEVICE_TYPE_NET || std::strcmp(r.tl_name, "tcp") == 0) continue;
      if (std::find(names->begin(), names->end(), r.dev_name) == names->end()) names->push_back(r.dev_name);
    }
    uct_release_tl_resource_list(resources);
  }
  uct_md_close(md);
}

}  // namespace

hixl_ucx_status_t RdmaDevices(std::vector<std::string> *names) {
  names->clear();
  uct_component_h *components = nullptr;
  unsigned num_components = 0;
  ucs_status_t st = uct_query_components(&components, &num_components);
  if (st != UCS_OK) {
    UCXP_LOGE("listing UCX's components failed: %s", ucs_status_string(st));
    return FromUcs(st);
  }
  for (unsigned c = 0; c < num_components; ++c) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK || attr.md_resource_count == 0) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    for (const auto &md : mds) AddDevicesOf(components[c], md.md_name, names);
  }
  uct_release_component_list(components);
  return HIXL_UCX_OK;
}

}  // namespace hixl::ucx_plugin
