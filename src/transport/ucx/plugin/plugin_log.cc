#include "transport/ucx/plugin/plugin_log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace hixl::ucx_plugin {
namespace {

// Set once, before the table is handed out; read by every thread after.
std::atomic<int (*)(int)> g_enabled{nullptr};
std::atomic<void (*)(int, const char *)> g_log{nullptr};

}  // namespace

void SetLogHost(const hixl_ucx_host_t *host) {
  g_enabled.store(host != nullptr ? host->log_enabled : nullptr);
  g_log.store(host != nullptr ? host->log : nullptr);
}

bool LogOn(int level) {
  auto enabled = g_enabled.load(std::memory_order_relaxed);
  if (enabled != nullptr) return enabled(level) != 0;
  return level <= HIXL_UCX_LOG_WARN;
}

void LogLine(int level, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  auto log = g_log.load(std::memory_order_relaxed);
  if (log != nullptr) {
    log(level, msg);
  } else {
    std::fprintf(stderr, "[hixl_ucx] %s\n", msg);
  }
}

}  // namespace hixl::ucx_plugin
