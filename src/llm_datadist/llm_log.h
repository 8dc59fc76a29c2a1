// llm_log.h: leveled logging of the KV-cache layer to stderr, with hixl's
// HIXL_LOG_LEVEL (error|warn|info|debug, default warn). The layer uses hixl
// through its public API only, so it has its own few lines of logging.
#pragma once

namespace llm_datadist {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

bool LogOn(LogLevel level);
void LogLine(LogLevel level, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

}  // namespace llm_datadist

#define LLM_LOG_(level, ...)                                                     \
  do {                                                                           \
    if (::llm_datadist::LogOn(level)) {                                          \
      ::llm_datadist::LogLine(level, __FILE__, __LINE__, __VA_ARGS__);           \
    }                                                                            \
  } while (0)
#define LLM_LOGE(...) LLM_LOG_(::llm_datadist::LogLevel::kError, __VA_ARGS__)
#define LLM_LOGW(...) LLM_LOG_(::llm_datadist::LogLevel::kWarn, __VA_ARGS__)
#define LLM_LOGI(...) LLM_LOG_(::llm_datadist::LogLevel::kInfo, __VA_ARGS__)
