// The UCX plug-in loader (in libhixl): where it looks, and the reason it
// gives when the plug-in, or UCX under it, is missing or does not fit.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "transport/ucx/ucx_loader.h"

namespace hixl::ucx {
namespace {

bool Contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

TEST(UcxLoader, AMissingPluginIsNamedWithItsPath) {
  PluginLoad load = LoadPluginFrom("/nonexistent/dir/libhixl_ucx.so");
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(Contains(load.why_not, "/nonexistent/dir/libhixl_ucx.so")) << load.why_not;
  EXPECT_TRUE(Contains(load.why_not, "No such file")) << load.why_not;
}

TEST(UcxLoader, ALibraryWithoutTheEntryPointIsRefused) {
  PluginLoad load = LoadPluginFrom(HIXL_FAKE_NO_ENTRY_PATH);
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(Contains(load.why_not, "not a hixl UCX plug-in")) << load.why_not;
}

TEST(UcxLoader, APluginOfAnotherAbiIsRefused) {
  PluginLoad load = LoadPluginFrom(HIXL_FAKE_WRONG_ABI_PATH);
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(Contains(load.why_not, "plug-in ABI 999")) << load.why_not;
  EXPECT_TRUE(Contains(load.why_not, "needs " + std::to_string(HIXL_UCX_ABI_VERSION))) << load.why_not;
}

TEST(UcxLoader, APluginWhoseUcxLibrariesAreMissingSaysSo) {
  // Its dependency (named like UCX's libraries) is built where no search
  // looks, as libucp is on a host without UCX.
  PluginLoad load = LoadPluginFrom(HIXL_FAKE_MISSING_DEP_PATH);
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(Contains(load.why_not, "libucx_absent_for_test.so")) << load.why_not;
  EXPECT_TRUE(Contains(load.why_not, "UCX is missing")) << load.why_not;
}

TEST(UcxLoader, TheEnvironmentVariableIsTheOnlyPlaceTriedWhenSet) {
  setenv("HIXL_UCX_PLUGIN", "/some/where/libx.so", 1);
  std::vector<std::string> c = PluginCandidates();
  unsetenv("HIXL_UCX_PLUGIN");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], "/some/where/libx.so");
}

TEST(UcxLoader, ItLooksBesideLibhixlThenInTheInstallDirectory) {
  unsetenv("HIXL_UCX_PLUGIN");
  std::vector<std::string> c = PluginCandidates();
  ASSERT_GE(c.size(), 2u);
  // The tests link libhixl's objects, so "beside libhixl" is beside them.
  EXPECT_TRUE(Contains(c[0], "/libhixl_ucx.so")) << c[0];
  EXPECT_TRUE(Contains(c[0], HIXL_LOADER_TEST_DIR)) << c[0];
  EXPECT_EQ(c.back(), "libhixl_ucx.so");
}

// A program that starts copies of itself through /proc/self/exe (hixl's
// own benchmarks and soak do): dladdr names the static libhixl in it
// "/proc/self/exe". The copy, this test run again in a child, must still
// look beside the program's file.
TEST(UcxLoader, ACopyStartedThroughProcSelfExeLooksBesideTheProgram) {
  const char *kChild = "HIXL_LOADER_TEST_CHILD";
  if (std::getenv(kChild) != nullptr) {  // the copy: say where it looks first
    std::printf("FIRST %s\n", PluginCandidates()[0].c_str());
    std::fflush(stdout);
    return;
  }
  unsetenv("HIXL_UCX_PLUGIN");
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    setenv(kChild, "1", 1);
    std::string filter = "--gtest_filter=UcxLoader.ACopyStartedThroughProcSelfExeLooksBesideTheProgram";
    char *argv[] = {const_cast<char *>("/proc/self/exe"), filter.data(), nullptr};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(out[1]);
  std::string said;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) said.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << said;
  const size_t at = said.find("FIRST ");
  ASSERT_NE(at, std::string::npos) << said;
  const std::string first = said.substr(at + 6, said.find('\n', at) - at - 6);
  EXPECT_EQ(first, std::string(HIXL_LOADER_TEST_DIR) + "/libhixl_ucx.so");
}

TEST(UcxLoader, TheBuiltPluginLoadsAndSaysWhichUcx) {
  std::string path = HIXL_UCX_PLUGIN_PATH;
  if (path.empty()) GTEST_SKIP() << "built without UCX";
  PluginLoad load = LoadPluginFrom(path);
  ASSERT_NE(load.api, nullptr) << load.why_not;
  EXPECT_EQ(load.api->abi_version, HIXL_UCX_ABI_VERSION);
  EXPECT_TRUE(Contains(load.api->version(), "(UCX 1.")) << load.api->version();
  EXPECT_STREQ(load.api->status_name(HIXL_UCX_ERR_PEER_FAILED), "PEER_FAILED");
}

}  // namespace
}  // namespace hixl::ucx
