#include "common/log.h"

#include "common/deadline.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
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

// The application's sink and its pointer, swapped whole (a line never
// pairs one sink with another's pointer). Old pairs are kept: a line may
// still be using one, and sinks are set a handful of times in a process.
// They stay reachable from a list (so leak checkers keep quiet), and setting
// the same pair again reuses its entry, so the list does not grow with it.
struct Sink {
  LogSink fn;
  void *user;
};
std::atomic<const Sink *> g_sink{nullptr};

const Sink *InternSink(LogSink fn, void *user) {
  static std::mutex mu;
  static std::deque<Sink> *const all = new std::deque<Sink>;  // never freed: see above
  std::lock_guard<std::mutex> lock(mu);
  for (const Sink &s : *all) {
    if (s.fn == fn && s.user == user) return &s;
  }
  all->push_back(Sink{fn, user});  // a deque keeps earlier entries in place
  return &all->back();
}

void Emit(LogLevel level, uint64_t suppressed, const char *file, int line, const char *fmt, va_list ap) {
  static const char kTag[] = {'E', 'W', 'I', 'D'};
  char msg[2048];
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  char tail[64] = "";
  if (suppressed > 0) {
    std::snprintf(tail, sizeof(tail), " [%llu similar line(s) left out before]",
                  static_cast<unsigned long long>(suppressed));
  }
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const int64_t day_s = ((static_cast<int64_t>(ts.tv_sec) + UtcOffset(ts.tv_sec)) % 86400 + 86400) % 86400;
  char text[2400];
  std::snprintf(text, sizeof(text), "[hixl %c %02d:%02d:%02d.%06ld %d:%ld %s:%d] %s%s", kTag[static_cast<int>(level)],
                static_cast<int>(day_s / 3600), static_cast<int>(day_s / 60 % 60), static_cast<int>(day_s % 60),
                ts.tv_nsec / 1000, static_cast<int>(getpid()), static_cast<long>(syscall(SYS_gettid)),
                Basename(file), line, msg, tail);
  const Sink *sink = g_sink.load(std::memory_order_acquire);
  if (sink != nullptr && sink->fn != nullptr) {
    sink->fn(level, text, sink->user);
    return;
  }
  // One fprintf per line so that lines from several threads do not interleave.
  std::fprintf(stderr, "%s\n", text);
}

}  // namespace

bool LogEnabled(LogLevel level) { return level <= Level(); }

void SetLogLevel(LogLevel level) { LevelVar().store(static_cast<int>(level)); }

void SetLogSink(LogSink sink, void *user) {
  g_sink.store(sink == nullptr ? nullptr : InternSink(sink, user), std::memory_order_release);
}

void LogPrintf(LogLevel level, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Emit(level, 0, file, line, fmt, ap);
  va_end(ap);
}

void LogPrintfLimited(LogLevel level, uint64_t suppressed, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Emit(level, suppressed, file, line, fmt, ap);
  va_end(ap);
}

bool LogLimiter::Allow(uint64_t *suppressed) {
  const int64_t now = SteadyMillis();
  int64_t start = window_ms_.load(std::memory_order_relaxed);
  if (now - start >= 1000 && window_ms_.compare_exchange_strong(start, now, std::memory_order_relaxed)) {
    used_.store(0, std::memory_order_relaxed);
  }
  if (used_.fetch_add(1, std::memory_order_relaxed) >= kLogBurst) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  *suppressed = dropped_.exchange(0, std::memory_order_relaxed);
  return true;
}

std::string StatusText(Status s) {
  const char *name = "unknown status";
  switch (s) {
    case SUCCESS: name = "SUCCESS"; break;
    case PARAM_INVALID: name = "PARAM_INVALID"; break;
    case TIMEOUT: name = "TIMEOUT"; break;
    case NOT_CONNECTED: name = "NOT_CONNECTED"; break;
    case ALREADY_CONNECTED: name = "ALREADY_CONNECTED"; break;
    case NOTIFY_FAILED: name = "NOTIFY_FAILED"; break;
    case UNSUPPORTED: name = "UNSUPPORTED"; break;
    case RESOURCE_EXHAUSTED: name = "RESOURCE_EXHAUSTED"; break;
    case FAILED: name = "FAILED"; break;
    default: break;
  }
  return std::string(name) + " (" + std::to_string(s) + ")";
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
