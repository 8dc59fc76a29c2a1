#include "bench_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <thread>

extern char **environ;

namespace hixl_bench {

bool ParseSize(const std::string &text, uint64_t *out) {
  if (text.empty()) return false;
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(text[i++] - '0');
  }
  if (i == 0) return false;
  std::string suffix = text.substr(i);
  uint64_t mult = 1;
  if (suffix == "" || suffix == "B") {
    mult = 1;
  } else if (suffix == "K" || suffix == "k" || suffix == "KiB") {
    mult = 1ull << 10;
  } else if (suffix == "M" || suffix == "m" || suffix == "MiB") {
    mult = 1ull << 20;
  } else if (suffix == "G" || suffix == "g" || suffix == "GiB") {
    mult = 1ull << 30;
  } else {
    return false;
  }
  if (v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

std::string FormatSize(uint64_t bytes) {
  const char *units[] = {"B", "K", "M", "G"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

std::vector<std::string> SplitList(const std::string &text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool ParseSizeList(const std::string &text, std::vector<uint64_t> *out) {
  out->clear();
  for (const auto &item : SplitList(text)) {
    uint64_t v = 0;
    if (!ParseSize(item, &v) || v == 0) return false;
    out->push_back(v);
  }
  return !out->empty();
}

bool ParseIntList(const std::string &text, std::vector<int> *out) {
  out->clear();
  for (const auto &item : SplitList(text)) {
    uint64_t v = 0;
    if (!ParseSize(item, &v) || v == 0 || v > 1000000) return false;
    out->push_back(static_cast<int>(v));
  }
  return !out->empty();
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 50); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(rank);
  size_t hi = std::min(lo + 1, v.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return v[lo] * (1 - frac) + v[hi] * frac;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double RunParallel(int n, const std::function<bool(int)> &fn) {
  if (n == 1) {
    double t0 = NowSeconds();
    bool ok = fn(0);
    return ok ? NowSeconds() - t0 : -1;
  }
  std::latch ready(n);
  std::latch go(1);
  std::atomic<bool> ok{true};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ready.count_down();
      go.wait();
      if (!fn(i)) ok = false;
    });
  }
  ready.wait();  // every thread is started and parked: time from here
  double t0 = NowSeconds();
  go.count_down();
  for (auto &t : threads) t.join();
  double t1 = NowSeconds();
  return ok ? t1 - t0 : -1;
}

void *AllocBuffer(size_t len) {
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0x5a, len);
  return p;
}

void *AllocMemfdBuffer(size_t len) {
  const int fd = memfd_create("hixl-bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(len)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    return nullptr;
  }
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0x5a, len);
  return p;
}

void FreeBuffer(void *p, size_t len) {
  if (p != nullptr) munmap(p, len);
}

int FreePort(int family) {
  int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET6) {
    auto *s6 = reinterpret_cast<sockaddr_in6 *>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = in6addr_loopback;
    len = sizeof(*s6);
  } else {
    auto *s4 = reinterpret_cast<sockaddr_in *>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(*s4);
  }
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) == 0) {
    port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port
                                    : reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
  }
  close(fd);
  return port;
}

bool SpawnSelf(const std::vector<std::string> &args, Child *child) {
  int out_pipe[2];
  int in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return false;
  if (pipe2(in_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], STDIN_FILENO);
  std::vector<std::string> all = {"/proc/self/exe"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (auto &a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  int rc = posix_spawn(&child->pid, exe, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(in_pipe[0]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(in_pipe[1]);
    return false;
  }
  child->out_fd = out_pipe[0];
  child->in_fd = in_pipe[1];
  return true;
}

bool ReadLineWithPrefix(Child &child, const std::string &prefix, int timeout_ms, std::string *line) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string buf;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{child.out_fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char c;
    ssize_t n = read(child.out_fd, &c, 1);
    if (n <= 0) return false;
    if (c != '\n') {
      buf.push_back(c);
      continue;
    }
    if (buf.compare(0, prefix.size(), prefix) == 0) {
      *line = buf.substr(prefix.size());
      return true;
    }
    buf.clear();
  }
  return false;
}

void StopChild(Child &child) {
  if (child.in_fd >= 0) close(child.in_fd);
  child.in_fd = -1;
  for (int i = 0; i < 100 && child.pid > 0; ++i) {
    int status;
    if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
      child.pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (child.pid > 0) {
    kill(child.pid, SIGKILL);
    waitpid(child.pid, nullptr, 0);
    child.pid = -1;
  }
  if (child.out_fd >= 0) close(child.out_fd);
  child.out_fd = -1;
}

}  // namespace hixl_bench
