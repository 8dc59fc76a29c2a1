#include "support/peer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

extern char **environ;

namespace hixl_test {

std::vector<std::string> Words(const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

PeerProcess::~PeerProcess() { Stop(2000); }

bool PeerProcess::Start(bool ipv6, const std::string &resource_config) {
  return Spawn(ipv6 ? "auto6" : "auto4", resource_config);
}

bool PeerProcess::StartAt(const std::string &local_engine, const std::string &resource_config) {
  return Spawn(local_engine, resource_config);
}

bool PeerProcess::Spawn(const std::string &mode_arg, const std::string &resource_config) {
  signal(SIGPIPE, SIG_IGN);  // a killed peer must not kill the test with it
  Stop(1000);
  pending_.clear();
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO);
  if (!stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  std::vector<std::string> args = prefix;
  args.push_back(HIXL_TEST_PEER_PATH);
  args.push_back(mode_arg);
  if (!resource_config.empty() || !options.empty()) args.push_back(resource_config);
  args.insert(args.end(), options.begin(), options.end());
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Our environment, with `env` replacing variables of the same name.
  std::vector<std::string> env_strings = env;
  for (char **e = environ; *e != nullptr; ++e) {
    std::string var = *e;
    std::string key = var.substr(0, var.find('='));
    bool overridden = false;
    for (const auto &x : env) overridden = overridden || x.compare(0, key.size() + 1, key + "=") == 0;
    if (!overridden) env_strings.push_back(var);
  }
  std::vector<char *> envp;
  for (auto &e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  int rc = posix_spawnp(&pid_, args[0].c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(to[0]);
  close(from[1]);
  to_fd_ = to[1];
  from_fd_ = from[0];
  if (rc != 0) {
    pid_ = -1;
    return false;
  }
  std::string ready = Command("", 10000);  // the READY line comes unasked
  auto w = Words(ready);
  if (w.size() != 2 || w[0] != "READY") return false;
  name_ = w[1];
  return true;
}

std::string PeerProcess::Command(const std::string &cmd, int timeout_ms) {
  if (!cmd.empty() && !Send(cmd)) return "";
  return ReadLine(timeout_ms);
}

bool PeerProcess::Send(const std::string &cmd) {
  std::string line = cmd + "\n";
  return write(to_fd_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

std::string PeerProcess::ReadLine(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{from_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = read(from_fd_, buf, sizeof(buf));
    if (n <= 0) return "";
    pending_.append(buf, static_cast<size_t>(n));
  }
}

uintptr_t PeerProcess::AllocRegistered(size_t len, size_t *id, uintptr_t *handle, const std::string &kind) {
  auto w = Words(Command("ALLOC " + std::to_string(len) + (kind.empty() ? "" : " " + kind)));
  if (w.size() != 3 || w[0] != "OK") return 0;
  *id = std::stoul(w[1]);
  uintptr_t addr = std::stoull(w[2]);
  auto r = Words(Command("REG " + w[1]));
  if (r.size() != 2 || r[0] != "OK") return 0;
  if (handle != nullptr) *handle = std::stoull(r[1]);
  return addr;
}

uint64_t PeerProcess::HashOf(size_t id, size_t off, size_t len) {
  auto w = Words(Command("HASH " + std::to_string(id) + " " + std::to_string(off) + " " + std::to_string(len)));
  return w.size() == 2 && w[0] == "OK" ? std::stoull(w[1]) : 0;
}

namespace {

// True when every thread of `pid` is stopped (state T in /proc).
bool AllThreadsStopped(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR *d = opendir(dir.c_str());
  if (d == nullptr) return true;  // gone
  bool stopped = true;
  while (dirent *e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'T') stopped = false;
  }
  closedir(d);
  return stopped;
}

}  // namespace

void PeerProcess::Kill(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  // SIGSTOP takes effect asynchronously: an I/O thread could still serve a
  // request sent right after. Wait until every thread has stopped.
  for (int i = 0; sig == SIGSTOP && i < 2000 && !AllThreadsStopped(pid_); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void PeerProcess::Stop(int timeout_ms) {
  if (pid_ <= 0) return;
  if (to_fd_ >= 0) {
    std::string quit = "QUIT\n";
    ssize_t n = write(to_fd_, quit.data(), quit.size());
    (void)n;
    close(to_fd_);
    to_fd_ = -1;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (pid_ > 0) {
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  if (from_fd_ >= 0) close(from_fd_);
  from_fd_ = -1;
}

}  // namespace hixl_test
