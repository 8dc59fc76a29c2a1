// bench_util.h: small helpers shared by hixl_bench's roles: sizes with
// suffixes, statistics, child processes that report a READY line.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hixl_bench {

// "4096", "4K", "1M", "2G" (binary units). False on anything else.
bool ParseSize(const std::string &text, uint64_t *out);
std::string FormatSize(uint64_t bytes);
// Comma-separated lists: "4K,64K" (sizes, > 0) and "1,2,4" (integers > 0).
bool ParseSizeList(const std::string &text, std::vector<uint64_t> *out);
bool ParseIntList(const std::string &text, std::vector<int> *out);
std::vector<std::string> SplitList(const std::string &text);

double Median(std::vector<double> v);
double Percentile(std::vector<double> v, double p);  // p in [0, 100]
double NowSeconds();

// Runs fn(0..n-1) on n threads released together; returns the seconds from
// the release to the last one's end, or a negative number if any fn
// returned false. n == 1 runs inline, so that a single-threaded figure
// carries no thread start-up.
double RunParallel(int n, const std::function<bool(int)> &fn);

// Page-aligned, pre-faulted memory of `len` bytes (munmap'ed by FreeBuffer).
void *AllocBuffer(size_t len);
// The same from a memfd sealed against shrinking, mapped MAP_SHARED (its fd
// stays open for the process's life: the engine finds the file by it).
void *AllocMemfdBuffer(size_t len);
void FreeBuffer(void *p, size_t len);

// A free TCP port on the loopback address of `family` (AF_INET / AF_INET6).
int FreePort(int family);

// A child running this executable with `args`; its stdout is a pipe.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // child's stdout
  int in_fd = -1;   // child's stdin; closing it asks the child to exit
};
bool SpawnSelf(const std::vector<std::string> &args, Child *child);
// Reads lines from the child until one starts with `prefix` (within
// timeout_ms); returns that line without the prefix.
bool ReadLineWithPrefix(Child &child, const std::string &prefix, int timeout_ms, std::string *line);
// Closes the child's stdin and waits for it (kills it after a grace period).
void StopChild(Child &child);

}  // namespace hixl_bench
