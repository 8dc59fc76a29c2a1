#include "common/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <strings.h>

namespace hixl {
namespace {

LogLevel ReadLevel() {
  const char *env = std::getenv("HIXL_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return LogLevel::kWarn;
  if (strcasecmp(env, "error") == 0) return LogLevel::kError;
  if (strcasecmp(env, "warn") == 0 || strcasecmp(env, "warning") == 0) return LogLevel::kWarn;
  if (strcasecmp(env, "info") == 0) return LogLevel::kInfo;
  if (strcasecmp(env, "debug") == 0) return LogLevel::kDebug;
  std::fprintf(stderr, "[hixl W] HIXL_LOG_LEVEL=%s is not error|warn|info|debug; using warn\n", env);
  return LogLevel::kWarn;
}

std::atomic<int> &LevelVar() {
  static std::atomic<int> level{static_cast<int>(ReadLevel())};
  return level;
}

LogLevel Level() { return static_cast<LogLevel>(LevelVar().load(std::memory_order_relaxed)); }

const char *Basename(const char *path) {
  const char *slash = std::strrchr(path, '/');
  return slash == nullptr ? path : slash + 1;
}

}  // namespace

bool LogEnabled(LogLevel level) { return level <= Level(); }

void SetLogLevel(LogLevel level) { LevelVar().store(static_cast<int>(level)); }

void LogPrintf(LogLevel level, const char *file, int line, const char *fmt, ...) {
  static const char kTag[] = {'E', 'W', 'I', 'D'};
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);

  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm parts{};
  localtime_r(&ts.tv_sec, &parts);
  // One fprintf per line so that lines from several threads do not interleave.
  std::fprintf(stderr, "[hixl %c %02d:%02d:%02d.%06ld %d:%ld %s:%d] %s\n", kTag[static_cast<int>(level)],
               parts.tm_hour, parts.tm_min, parts.tm_sec, ts.tv_nsec / 1000, static_cast<int>(getpid()),
               static_cast<long>(syscall(SYS_gettid)), Basename(file), line, msg);
}

std::string LogSafe(const std::string &s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c <= 0x7e && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char esc[5];
      std::snprintf(esc, sizeof(esc), "\\x%02x", c);
      out += esc;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace hixl
