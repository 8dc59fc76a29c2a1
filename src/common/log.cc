#include "common/log.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
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

// The local time's offset from UTC, looked up (localtime_r) at most once a
// minute rather than for each line: localtime_r takes a glibc lock that
// fork() does not reset, so the child of a fork whose parent thread was in it
// would hang in its first log line. The child never looks it up again.
std::atomic<long> g_utc_offset{0};
std::atomic<int64_t> g_offset_at{INT64_MIN / 2};  // CLOCK_REALTIME seconds of the last look
std::atomic<bool> g_in_fork_child{false};

long UtcOffset(time_t now) {
  if (!g_in_fork_child.load(std::memory_order_relaxed) &&
      now - g_offset_at.load(std::memory_order_relaxed) >= 60) {
    tm parts{};
    localtime_r(&now, &parts);
    g_utc_offset.store(parts.tm_gmtoff, std::memory_order_relaxed);
    g_offset_at.store(now, std::memory_order_relaxed);
  }
  return g_utc_offset.load(std::memory_order_relaxed);
}

// Looked up once as the library loads (no thread of ours runs yet).
const int g_log_init = [] {
  UtcOffset(time(nullptr));
  return pthread_atfork(nullptr, nullptr, [] { g_in_fork_child.store(true); });
}();

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
  const int64_t day_s = ((static_cast<int64_t>(ts.tv_sec) + UtcOffset(ts.tv_sec)) % 86400 + 86400) % 86400;
  // One fprintf per line so that lines from several threads do not interleave.
  std::fprintf(stderr, "[hixl %c %02d:%02d:%02d.%06ld %d:%ld %s:%d] %s\n", kTag[static_cast<int>(level)],
               static_cast<int>(day_s / 3600), static_cast<int>(day_s / 60 % 60), static_cast<int>(day_s % 60),
               ts.tv_nsec / 1000, static_cast<int>(getpid()), static_cast<long>(syscall(SYS_gettid)), Basename(file),
               line, msg);
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
