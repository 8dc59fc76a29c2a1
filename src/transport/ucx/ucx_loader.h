// ucx_loader.h: finds and loads the UCX plug-in (libhixl_ucx.so) at run
// time, so that libhixl itself never links UCX. Where it looks, in order:
// $HIXL_UCX_PLUGIN (a path; then nowhere else), the directory libhixl was
// loaded from, the directory hixl was installed to, and the loader's own
// search path. The plug-in is never unloaded (UCX keeps threads and global
// state).
#pragma once

#include <string>
#include <vector>

#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx {

struct PluginLoad {
  const hixl_ucx_api_t *api = nullptr;  // null: not loaded, see why_not
  std::string path;                     // the file that was loaded
  std::string why_not;                  // every place tried and why each failed
};

// The places LoadPlugin tries, in order.
std::vector<std::string> PluginCandidates();
// Loads the plug-in once per process; later calls return the first outcome.
// Logs nothing: the caller says once what it falls back to.
const PluginLoad &LoadPlugin();
// Loads the plug-in from `path` (no caching, nothing else tried).
PluginLoad LoadPluginFrom(const std::string &path);

}  // namespace hixl::ucx
