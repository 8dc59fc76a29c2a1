// log.h: leveled logging, to stderr or the application's sink (the public
// include/hixl/hixl_log.h). HIXL_LOG_LEVEL=error|warn|info|debug (default
// warn) picks what is printed; read once, at first use.
//
// A failure is logged once, where its cause is known, with the offending
// value. What a peer can make happen as often as it likes (a malformed
// frame, a refused handshake, a segment outside every region) is logged
// with the _RL macros: at most kLogBurst lines per call site per second, the
// rest counted and the count printed with the next line let through.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hixl/hixl_log.h"
#include "hixl/hixl_types.h"

namespace hixl {

// True when messages of `level` are printed.
bool LogEnabled(LogLevel level);
void LogPrintf(LogLevel level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
// The same, saying that `suppressed` similar lines were left out before it.
void LogPrintfLimited(LogLevel level, uint64_t suppressed, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

// A status by name and number, for log lines: "TIMEOUT (103901)".
std::string StatusText(Status s);

// Lines a call site may log per second with the _RL macros.
constexpr uint32_t kLogBurst = 10;

// One call site's budget (a static in the _RL macros).
class LogLimiter {
 public:
  // Whether a line may go out now; if so, *suppressed gets how many were
  // left out since the last one that did.
  bool Allow(uint64_t *suppressed);

 private:
  std::atomic<int64_t> window_ms_{INT64_MIN / 2};  // start of the current second
  std::atomic<uint32_t> used_{0};                  // lines let through in it
  std::atomic<uint64_t> dropped_{0};               // since the last line let through
};
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
#define HIXL_LOG_RL_(level, ...)                                                  \
  do {                                                                            \
    if (::hixl::LogEnabled(level)) {                                              \
      static ::hixl::LogLimiter hixl_limiter_;                                    \
      uint64_t hixl_suppressed_ = 0;                                              \
      if (hixl_limiter_.Allow(&hixl_suppressed_)) {                               \
        ::hixl::LogPrintfLimited(level, hixl_suppressed_, __FILE__, __LINE__, __VA_ARGS__); \
      }                                                                           \
    }                                                                             \
  } while (0)
#define HIXL_LOGE(...) HIXL_LOG_(::hixl::LogLevel::kError, __VA_ARGS__)
#define HIXL_LOGW(...) HIXL_LOG_(::hixl::LogLevel::kWarn, __VA_ARGS__)
#define HIXL_LOGI(...) HIXL_LOG_(::hixl::LogLevel::kInfo, __VA_ARGS__)
#define HIXL_LOGD(...) HIXL_LOG_(::hixl::LogLevel::kDebug, __VA_ARGS__)
// Rate-limited: for what a peer can trigger at will.
#define HIXL_LOGE_RL(...) HIXL_LOG_RL_(::hixl::LogLevel::kError, __VA_ARGS__)
#define HIXL_LOGW_RL(...) HIXL_LOG_RL_(::hixl::LogLevel::kWarn, __VA_ARGS__)
#define HIXL_LOGI_RL(...) HIXL_LOG_RL_(::hixl::LogLevel::kInfo, __VA_ARGS__)
