#include "transport/ucx/ucx_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "common/log.h"

#ifndef HIXL_UCX_PLUGIN_DIR
#define HIXL_UCX_PLUGIN_DIR ""
#endif

namespace hixl::ucx {
namespace {

constexpr char kPluginName[] = "libhixl_ucx.so";

int HostLogEnabled(int level) { return LogEnabled(static_cast<LogLevel>(level)) ? 1 : 0; }
void HostLog(int level, const char *msg) { LogPrintf(static_cast<LogLevel>(level), "ucx_plugin", 0, "%s", msg); }
const hixl_ucx_host_t kHost = {HostLogEnabled, HostLog};

std::string DirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::vector<std::string> PluginCandidates() {
  const char *env = std::getenv("HIXL_UCX_PLUGIN");
  if (env != nullptr && *env != '\0') return {env};
  std::vector<std::string> out;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&PluginCandidates), &info) != 0 && info.dli_fname != nullptr) {
    std::string self = info.dli_fname;
    // A static libhixl is part of the program, which dladdr names as it was
    // started: maybe relative to a directory since left, or as
    // /proc/self/exe (a program that starts copies of itself so), whose
    // directory is no place to look. The kernel's link names the file.
    char exe[4096];
    const bool as_started = self.empty() || self[0] != '/' || self.rfind("/proc/", 0) == 0;
    ssize_t n = as_started ? readlink("/proc/self/exe", exe, sizeof(exe) - 1) : -1;
    if (n > 0) self.assign(exe, static_cast<size_t>(n));
    out.push_back(DirOf(self) + "/" + kPluginName);
  }
  std::string installed = std::string(HIXL_UCX_PLUGIN_DIR) + "/" + kPluginName;
  if (std::string_view(HIXL_UCX_PLUGIN_DIR).size() > 0 && (out.empty() || out[0] != installed)) {
    out.push_back(installed);
  }
  out.push_back(kPluginName);  // LD_LIBRARY_PATH, the cache, the defaults
  return out;
}

PluginLoad LoadPluginFrom(const std::string &path) {
  PluginLoad load;
  load.path = path;
  dlerror();
  // RTLD_NOW: a missing UCX symbol (a plug-in built against a newer UCX)
  // shows here, not as a crash later.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *err = dlerror();
    std::string why = err != nullptr ? err : "dlopen failed";
    // libucp, libuct, libucs: the plug-in is there, UCX is not.
    if (why.find("libuc") != std::string::npos) why += " (UCX is missing: install libucx0, or set LD_LIBRARY_PATH)";
    load.why_not = path + ": " + why;
    return load;
  }
  auto entry = reinterpret_cast<hixl_ucx_entry_fn>(dlsym(handle, HIXL_UCX_ENTRY_SYMBOL));
  if (entry == nullptr) {
    load.why_not = path + ": not a hixl UCX plug-in (no " HIXL_UCX_ENTRY_SYMBOL ")";
    dlclose(handle);
    return load;
  }
  const hixl_ucx_api_t *api = entry(HIXL_UCX_ABI_VERSION, &kHost);
  if (api == nullptr || api->abi_version != HIXL_UCX_ABI_VERSION || api->struct_size != sizeof(hixl_ucx_api_t)) {
    load.why_not = path + ": plug-in ABI " + (api != nullptr ? std::to_string(api->abi_version) : "?") +
                   ", libhixl needs " + std::to_string(HIXL_UCX_ABI_VERSION) + " (a plug-in from another hixl build)";
    // Not closed: the plug-in may have started something before refusing.
    return load;
  }
  load.api = api;
  return load;
}

const PluginLoad &LoadPlugin() {
  static const PluginLoad loaded = [] {
    PluginLoad result;
    for (const std::string &path : PluginCandidates()) {
      PluginLoad attempt = LoadPluginFrom(path);
      if (attempt.api != nullptr) return attempt;
      result.why_not += (result.why_not.empty() ? "" : "; ") + attempt.why_not;
    }
    return result;
  }();
  return loaded;
}

}  // namespace hixl::ucx
