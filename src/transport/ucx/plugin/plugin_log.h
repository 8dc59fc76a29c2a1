// plugin_log.h: the plug-in's log, written through the host's (libhixl's)
// log functions handed to the entry point.
#pragma once

#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx_plugin {

// Keeps a copy of `host`'s functions; called by the entry point before any
// other call can run.
void SetLogHost(const hixl_ucx_host_t *host);
bool LogOn(int level);
void LogLine(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace hixl::ucx_plugin

#define UCXP_LOG_(level, ...)                                                      \
  do {                                                                             \
    if (::hixl::ucx_plugin::LogOn(level)) ::hixl::ucx_plugin::LogLine(level, __VA_ARGS__); \
  } while (0)
#define UCXP_LOGE(...) UCXP_LOG_(HIXL_UCX_LOG_ERROR, __VA_ARGS__)
#define UCXP_LOGW(...) UCXP_LOG_(HIXL_UCX_LOG_WARN, __VA_ARGS__)
#define UCXP_LOGI(...) UCXP_LOG_(HIXL_UCX_LOG_INFO, __VA_ARGS__)
#define UCXP_LOGD(...) UCXP_LOG_(HIXL_UCX_LOG_DEBUG, __VA_ARGS__)
