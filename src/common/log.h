// log.h: leveled logging to stderr. HIXL_LOG_LEVEL=error|warn|info|debug
// (default warn) picks what is printed; read once, at first use.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <string>

namespace hixl {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// True when messages of `level` are printed.
bool LogEnabled(LogLevel level);
// Overrides HIXL_LOG_LEVEL from now on (tests that read the log use it).
void SetLogLevel(LogLevel level);
void LogPrintf(LogLevel level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
// A string from a peer, fit for a log line: bytes outside printable ASCII as
// \xNN, and at most `max` of them (then "...").
std::string LogSafe(const std::string &s, size_t max = 64);

}  // namespace hixl

#define HIXL_LOG_(level, ...)                                              \
  do {                                                                     \
    if (::hixl::LogEnabled(level)) {                                       \
      ::hixl::LogPrintf(level, __FILE__, __LINE__, __VA_ARGS__);           \
    }                                                                      \
  } while (0)
#define HIXL_LOGE(...) HIXL_LOG_(::hixl::LogLevel::kError, __VA_ARGS__)
#define HIXL_LOGW(...) HIXL_LOG_(::hixl::LogLevel::kWarn, __VA_ARGS__)
#define HIXL_LOGI(...) HIXL_LOG_(::hixl::LogLevel::kInfo, __VA_ARGS__)
#define HIXL_LOGD(...) HIXL_LOG_(::hixl::LogLevel::kDebug, __VA_ARGS__)
