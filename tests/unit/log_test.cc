// log_test.cc: peer strings made fit for a log line (LogSafe).
#include "common/log.h"

#include <gtest/gtest.h>

namespace hixl {
namespace {

TEST(LogSafeTest, EscapesWhatIsNotPrintableAndCutsLongStrings) {
  EXPECT_EQ(LogSafe("kv-cache/layer 3"), "kv-cache/layer 3");
  EXPECT_EQ(LogSafe("a\nb"), "a\\x0ab");  // no forged second line
  EXPECT_EQ(LogSafe("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(LogSafe("back\\slash"), "back\\x5cslash");  // escapes stay unambiguous
  EXPECT_EQ(LogSafe(std::string("\0z", 2)), "\\x00z");
  EXPECT_EQ(LogSafe(std::string(100, 'n'), 8), "nnnnnnnn...");
  EXPECT_EQ(LogSafe(""), "");
}

}  // namespace
}  // namespace hixl
