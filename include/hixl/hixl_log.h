/*
 * hixl_log.h: where the library's log goes, beyond HIXL's API.
 *
 * By default every line at or above HIXL_LOG_LEVEL (error|warn|info|debug,
 * default warn) goes to stderr. An application that keeps its own log
 * installs a sink instead. C++14, standard library only.
 */
#ifndef HIXL_HIXL_LOG_H_
#define HIXL_HIXL_LOG_H_

#include <cstdint>

#include "hixl/hixl_types.h"

namespace hixl {

enum class LogLevel : int32_t { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// Gets every line the library logs at or above the level in force: one call
// per line, from any of the library's threads, possibly several at once.
// `line` is the message with its prefix (time, thread, source) and no
// newline, valid for the call only. A sink must not call into the library.
using LogSink = void (*)(LogLevel level, const char *line, void *user);

// Installs `sink` with its `user` pointer (nullptr: stderr again). Lines
// being logged meanwhile go to the old sink or the new one.
ASCEND_FUNC_VISIBILITY void SetLogSink(LogSink sink, void *user);
// Overrides HIXL_LOG_LEVEL from now on.
ASCEND_FUNC_VISIBILITY void SetLogLevel(LogLevel level);

}  // namespace hixl

#endif  // HIXL_HIXL_LOG_H_
