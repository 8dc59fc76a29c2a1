// log_test.cc: peer strings made fit for a log line (LogSafe), the log sink,
// rate limits, status names.
#include "common/log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

namespace hixl {
namespace {

// Collects what the library logs through the public sink.
struct Captured {
  std::mutex mu;
  std::vector<std::pair<LogLevel, std::string>> lines;
  static void Sink(LogLevel level, const char *line, void *user) {
    auto *c = static_cast<Captured *>(user);
    std::lock_guard<std::mutex> lock(c->mu);
    c->lines.emplace_back(level, line);
  }
};

class LogSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogLevel(LogLevel::kInfo);
    SetLogSink(&Captured::Sink, &captured_);
  }
  void TearDown() override {
    SetLogSink(nullptr, nullptr);
    SetLogLevel(LogLevel::kError);
  }
  Captured captured_;
};

TEST_F(LogSinkTest, ASinkGetsEachLineWithItsLevelAndNothingGoesToStderr) {
  ::testing::internal::CaptureStderr();
  HIXL_LOGW("a warning about %s", "x");
  HIXL_LOGI("some information");
  HIXL_LOGD("debug is below the level: %d", 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(captured_.lines.size(), 2u);
  EXPECT_EQ(captured_.lines[0].first, LogLevel::kWarn);
  EXPECT_NE(captured_.lines[0].second.find("a warning about x"), std::string::npos) << captured_.lines[0].second;
  EXPECT_NE(captured_.lines[0].second.find("[hixl W "), std::string::npos) << captured_.lines[0].second;
  EXPECT_EQ(captured_.lines[0].second.find('\n'), std::string::npos);
  EXPECT_EQ(captured_.lines[1].first, LogLevel::kInfo);
  // Uninstalled: stderr again.
  SetLogSink(nullptr, nullptr);
  ::testing::internal::CaptureStderr();
  HIXL_LOGW("back on stderr");
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("back on stderr"), std::string::npos);
  EXPECT_EQ(captured_.lines.size(), 2u);
}

TEST_F(LogSinkTest, WhatAPeerCanTriggerIsLimitedPerCallSite) {
  // A peer sending bad frames in a loop: one call site, many lines.
  auto flood = [](int n) {
    for (int i = 0; i < n; ++i) HIXL_LOGE_RL("serving peer: protocol error %d", i);
  };
  flood(1000);
  ASSERT_EQ(captured_.lines.size(), kLogBurst);
  EXPECT_NE(captured_.lines.back().second.find("protocol error 9"), std::string::npos);
  // The next second lets a line through again, saying how many were left out.
  std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  flood(1);
  ASSERT_EQ(captured_.lines.size(), kLogBurst + 1);
  EXPECT_NE(captured_.lines.back().second.find("[990 similar line(s) left out before]"), std::string::npos)
      << captured_.lines.back().second;
  // Another call site has a budget of its own.
  HIXL_LOGE_RL("another site");
  EXPECT_EQ(captured_.lines.size(), kLogBurst + 2);
}

TEST(StatusTextTest, NamesAndNumbers) {
  EXPECT_EQ(StatusText(SUCCESS), "SUCCESS (0)");
  EXPECT_EQ(StatusText(TIMEOUT), "TIMEOUT (103901)");
  EXPECT_EQ(StatusText(RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED (203900)");
  EXPECT_EQ(StatusText(FAILED), "FAILED (503900)");
  EXPECT_EQ(StatusText(12345), "unknown status (12345)");
}

}  // namespace
}  // namespace hixl
