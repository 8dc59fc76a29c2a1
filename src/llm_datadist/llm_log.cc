#include "llm_log.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace llm_datadist {
namespace {

LogLevel FromEnv() {
  const char *env = std::getenv("HIXL_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kWarn;
  if (strcasecmp(env, "error") == 0) return LogLevel::kError;
  if (strcasecmp(env, "info") == 0) return LogLevel::kInfo;
  if (strcasecmp(env, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kWarn;  // hixl itself warns about a bad value
}

}  // namespace

bool LogOn(LogLevel level) {
  static const LogLevel configured = FromEnv();
  return level <= configured;
}

void LogLine(LogLevel level, const char *file, int line, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const char *base = std::strrchr(file, '/');
  // One write per line: lines of concurrent threads do not interleave.
  std::fprintf(stderr, "[llm_datadist %c %ld.%06ld %ld %s:%d] %s\n", "EWID"[static_cast<int>(level)],
               static_cast<long>(ts.tv_sec), ts.tv_nsec / 1000, static_cast<long>(syscall(SYS_gettid)),
               base == nullptr ? file : base + 1, line, msg);
}

}  // namespace llm_datadist
