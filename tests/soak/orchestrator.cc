// orchestrator.cc: runs a soak. It spawns the targets and initiators (this
// binary in those roles), and for --seconds: SIGKILLs a random one of them
// every 1-4 s and restarts it 0.5-1.5 s later (target 0 and initiator 0,
// the stable ones, are never killed), freezes one (SIGSTOP) for 0.2-2 s
// every 2-5 s, and at checkpoints stops all work,
// has every initiator reach every target, and takes the stable ones' open
// fds and RSS. It gathers the children's reports and FAIL lines, and fails
// the run on any FAIL, any child that died unasked, or fds or RSS that
// grew (see kFdSlack, kRssSlack).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "soak/child.h"
#include "soak/freezes.h"
#include "soak/proc_stats.h"
#include "soak/soak.h"

extern char **environ;

namespace soak {
namespace {

// "Flat": at every checkpoint a stable process holds the open fds it held
// at the first, give or take kFdSlack, and at the last its RSS is at most
// max(10 %, 8 MiB) above what it was at the second (after a first interval
// of faults of every kind: allocator arenas, pools and caches have grown).
constexpr long kFdSlack = 2;
// A target's UCX worker holds sockets of its own per initiator of UCX's tcp
// (one in each direction), and lets a vanished one's go only when it finds
// the peer gone (seconds later): with ucx initiators the stable target's
// fds are compared at the last checkpoint only, with a few more per ucx
// initiator.
constexpr long kUcxFdSlack = 4;
constexpr double kRssSlackFraction = 0.10;
constexpr long kRssSlackKiB = 8 << 10;

struct Child {
  std::string role;
  int index = 0;
  int incarnation = 0;
  bool stable = false;  // never killed
  pid_t pid = -1;
  int in = -1;   // its stdin
  int out = -1;  // its stdout
  std::string partial;
  std::deque<std::string> replies;
  std::map<std::string, long long> stat;  // its life's last STAT
  bool killed = false;                    // by us: its death is expected
  bool frozen = false;                    // SIGSTOPped until thaw_at
  Clock::time_point born, restart_at, thaw_at;
  std::string name() const { return role + " " + std::to_string(index); }
};

struct Sample {
  double at_s;
  long fds[2], rss_kib[2];  // target 0, initiator 0
};

class Orchestrator {
 public:
  explicit Orchestrator(const Args &a) : a_(a), rng_(a.seed) {}

  int Run() {
    start_ = Clock::now();
    if (!PickPorts()) return 1;
    freezes_ = MapFreezes(FreezesPath(a_.dir), true);
    if (freezes_ == nullptr) {
      std::fprintf(stderr, "hixl_soak: cannot make %s\n", FreezesPath(a_.dir).c_str());
      return 1;
    }
    for (const char *role : {"target", "initiator"}) {
      for (int i = 0; i < (role[0] == 't' ? a_.targets : a_.initiators); ++i) {
        Child c;
        c.role = role;
        c.index = i;
        c.stable = i == 0;
        children_.push_back(c);
      }
    }
    for (auto &c : children_) {
      if (!Spawn(c)) return Finish();
    }
    const int warmup = std::min(10, std::max(1, a_.seconds / 4));
    const int interval = std::clamp(a_.seconds / 5, 10, 60);
    auto next_checkpoint = start_ + std::chrono::seconds(warmup);
    auto next_kill = start_ + std::chrono::seconds(2);
    auto next_freeze = start_ + std::chrono::seconds(3);
    const auto end = start_ + std::chrono::seconds(a_.seconds);
    while (Clock::now() < end && failures_.size() < 50) {
      Pump(100);
      auto now = Clock::now();
      if (now >= next_checkpoint && end - now > std::chrono::seconds(interval / 2)) {
        Checkpoint(true);
        next_checkpoint = Clock::now() + std::chrono::seconds(interval);
      } else if (now >= next_kill) {
        KillOne();
        next_kill = now + std::chrono::milliseconds(1000 + rng_() % 3000);
      } else if (now >= next_freeze) {
        FreezeOne();
        next_freeze = now + std::chrono::milliseconds(2000 + rng_() % 3000);
      }
      for (auto &c : children_) {
        if (c.frozen && Clock::now() >= c.thaw_at) Thaw(c);
        if (c.pid < 0 && Clock::now() >= c.restart_at) Spawn(c);
      }
    }
    Checkpoint(false);
    return Finish();
  }

 private:
  // Free ports below the kernel's ephemeral range (32768 and up), so that
  // no outgoing connection takes one while its target is being restarted.
  bool PickPorts() {
    std::vector<int> picked;
    for (int i = 0; i < 1000 && static_cast<int>(picked.size()) < a_.targets; ++i) {
      const int port = 20000 + static_cast<int>(rng_() % 12000);
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      sa.sin_port = htons(static_cast<uint16_t>(port));
      const bool free = bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0;
      close(fd);
      if (free && std::find(picked.begin(), picked.end(), port) == picked.end()) {
        ports_ += (picked.empty() ? "" : ",") + std::to_string(port);
        picked.push_back(port);
      }
    }
    if (static_cast<int>(picked.size()) < a_.targets) std::fprintf(stderr, "hixl_soak: no free port for the targets\n");
    return static_cast<int>(picked.size()) == a_.targets;
  }

  bool Spawn(Child &c) {
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) return Fail("pipe: out of fds");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO);
    const std::string log = LogPath(c);
    // Its log: this life's only (a stable one's is its whole run; one that
    // died unasked was kept and shown, see Reap).
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string transports;
    for (const std::string &t : a_.transports) transports += (transports.empty() ? "" : ",") + t;
    std::vector<std::string> args = {"/proc/self/exe", "--role", c.role, "--index", std::to_string(c.index),
                                     "--incarnation", std::to_string(c.incarnation), "--ports", ports_,
                                     "--seed", std::to_string(a_.seed), "--freezes", FreezesPath(a_.dir),
                                     "--transports", transports,
                                     "--self-check",
                                     a_.self_check && c.role == "target" && c.index == 0 ? "1" : "0"};
    std::vector<char *> argv;
    for (auto &s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    int rc = posix_spawn(&c.pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    c.in = to[1];
    c.out = from[0];
    c.partial.clear();
    c.replies.clear();
    c.stat.clear();
    c.killed = false;
    c.born = Clock::now();
    if (rc != 0) {
      c.pid = -1;
      return Fail("cannot spawn " + c.name());
    }
    if (Await(c, "READY", 30000).empty()) return Fail(c.name() + " did not start within 30 s (see " + log + ")");
    return true;
  }

  // Reads what the children say for up to `ms`, and reaps the dead.
  void Pump(int ms) {
    std::vector<pollfd> fds;
    std::vector<Child *> who;
    for (auto &c : children_) {
      if (c.out >= 0) {
        fds.push_back({c.out, POLLIN, 0});
        who.push_back(&c);
      }
    }
    if (poll(fds.data(), fds.size(), ms) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0) ReadSome(*who[i]);
      }
    }
    for (auto &c : children_) Reap(c, false);
  }

  // One read of what `c` said; false at its end.
  bool ReadSome(Child &c) {
    char buf[4096];
    ssize_t n = read(c.out, buf, sizeof(buf));
    if (n <= 0) {
      close(c.out);
      c.out = -1;
      return false;
    }
    c.partial.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = c.partial.find('\n')) != std::string::npos;) {
      Line(c, c.partial.substr(0, nl));
      c.partial.erase(0, nl + 1);
    }
    return true;
  }

  void Line(Child &c, const std::string &line) {
    if (line.compare(0, 5, "STAT ") == 0) {
      std::istringstream in(line.substr(5));
      for (std::string kv; in >> kv;) {
        size_t eq = kv.find('=');
        if (eq != std::string::npos) c.stat[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
      }
    } else if (line.compare(0, 5, "FAIL ") == 0) {
      Fail(c.name() + " (life " + std::to_string(c.incarnation) + "): " + line.substr(5));
    } else {
      c.replies.push_back(line);
    }
  }

  // A child's stderr, this life's.
  std::string LogPath(const Child &c) const { return a_.dir + "/" + c.role + std::to_string(c.index) + ".log"; }

  // A child that died unasked (a sanitizer's report: exit status 66 under
  // TSan): its log is kept beside the next life's, and what a sanitizer
  // said there, or else its last lines, is printed, so that CI's output
  // shows why.
  void ShowDeath(const Child &c) const {
    const std::string log = LogPath(c);
    const std::string kept = log + ".died-" + std::to_string(c.pid);
    if (std::rename(log.c_str(), kept.c_str()) != 0) return;
    std::ifstream in(kept);
    std::vector<std::string> lines;
    size_t report = SIZE_MAX;
    for (std::string line; std::getline(in, line);) {
      if (report == SIZE_MAX && (line.find("Sanitizer") != std::string::npos ||
                                 line.find("runtime error:") != std::string::npos)) {
        report = lines.size();
      }
      lines.push_back(std::move(line));
    }
    const size_t from = report != SIZE_MAX ? report : lines.size() - std::min<size_t>(lines.size(), 20);
    const size_t to = std::min(lines.size(), from + 80);
    std::printf("--- %s, pid %d: %s (kept in %s) ---\n", c.name().c_str(), static_cast<int>(c.pid),
                report != SIZE_MAX ? "the sanitizer's report" : "its last lines", kept.c_str());
    for (size_t i = from; i < to; ++i) std::printf("%s\n", lines[i].c_str());
    std::fflush(stdout);
  }

  // With ucx initiators, UCX 1.13-1.19 aborts a target whose reply to an
  // emulated get or put meets an endpoint that failed meanwhile (its
  // initiator frozen or gone): `ucs_fatal("unexpected error: ...")` in
  // ucp_request_try_send, or an assertion purging a pending wireup reply.
  bool KnownUcxAbort(const Child &c) const {
    if (!Asks(a_, "ucx")) return false;
    std::ifstream in(LogPath(c));
    for (std::string line; std::getline(in, line);) {
      if ((line.find("ucp_request.inl") != std::string::npos &&
           line.find("Fatal: unexpected error:") != std::string::npos) ||
          line.find("got REP message") != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  long UcxInitiators() const {
    long n = 0;
    for (int i = 0; i < a_.initiators; ++i) n += TransportOf(a_, i) == "ucx";
    return n;
  }

  // Folds a dead child's counters into the totals; a death not ours is a failure.
  void Reap(Child &c, bool wait) {
    if (c.pid < 0) return;
    int status = 0;
    if (waitpid(c.pid, &status, wait ? 0 : WNOHANG) != c.pid) return;
    // What it said last (its final report) may still be in the pipe.
    for (int i = 0; i < 1000 && c.out >= 0; ++i) {
      pollfd p{c.out, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0 || !ReadSome(c)) break;
    }
    if (!c.killed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0 && quitting_)) {
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && KnownUcxAbort(c)) {
        // Not ours (docs/ucx.md, known UCX defects): counted and shown, and
        // the process restarts as if we had killed it.
        ++ucx_aborts_;
        if (c.stable) unstable_ = true;
        std::printf("%s aborted in UCX (a known UCX defect of its emulated transports; docs/ucx.md)\n",
                    c.name().c_str());
        ShowDeath(c);
      } else {
        Fail(c.name() + " died unasked: " +
             (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                  : "exit status " + std::to_string(WEXITSTATUS(status))));
        ShowDeath(c);
      }
    }
    for (auto &[k, v] : c.stat) {
      if (k == "max_over_ms") {
        max_over_ms_ = std::max(max_over_ms_, v);
      } else {
        totals_[c.role][k] += v;
      }
    }
    c.stat.clear();
    c.pid = -1;
    c.frozen = false;
    if (c.in >= 0) close(c.in);
    if (c.out >= 0) close(c.out);
    c.in = c.out = -1;
    c.restart_at = Clock::now() + std::chrono::milliseconds(500 + rng_() % 1000);
    if (c.role == "initiator") ++c.incarnation;
  }

  // The next reply of `c` starting with `prefix`; "" if none came in time.
  std::string Await(Child &c, const std::string &prefix, int ms) {
    const auto t0 = Clock::now();
    while (MsSince(t0) < ms && c.pid > 0) {
      while (!c.replies.empty()) {
        std::string r = c.replies.front();
        c.replies.pop_front();
        if (r.compare(0, prefix.size(), prefix) == 0) return r;
      }
      Pump(50);
    }
    return "";
  }

  void Send(Child &c, const std::string &cmd) {
    std::string line = cmd + "\n";
    if (c.in < 0 || write(c.in, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      Fail("cannot send " + cmd + " to " + c.name());
    }
  }

  void KillOne() {
    std::vector<Child *> candidates;
    for (auto &c : children_) {
      if (!c.stable && c.pid > 0 && MsSince(c.born) >= 3000) candidates.push_back(&c);
    }
    if (candidates.empty()) return;
    Child &c = *candidates[rng_() % candidates.size()];
    c.killed = true;
    kill(c.pid, SIGKILL);
    Reap(c, true);
    ++kills_[c.role];
  }

  // A frozen process: calls to it must still end by their deadlines, and a
  // same-host initiator that cannot answer a revocation holds DeregisterMem.
  void FreezeOne() {
    std::vector<Child *> candidates;
    for (auto &c : children_) {
      if (c.pid > 0 && !c.frozen) candidates.push_back(&c);
    }
    if (candidates.empty()) return;
    Child &c = *candidates[rng_() % candidates.size()];
    kill(c.pid, SIGSTOP);
    c.frozen = true;
    c.thaw_at = Clock::now() + std::chrono::milliseconds(200 + rng_() % 1800);
    ++froze_[c.role];
  }

  void Thaw(Child &c) {
    if (c.pid > 0) {
      BumpCount(freezes_ + FreezeSlot(c.role == "target", c.index));  // before the SIGCONT: see freezes.h
      kill(c.pid, SIGCONT);
    }
    c.frozen = false;
  }

  // Stops the work, has every initiator reach every target, and samples the
  // stable ones; then resumes (unless it is the last).
  void Checkpoint(bool resume) {
    const auto t0 = Clock::now();
    for (auto &c : children_) {
      if (c.frozen) Thaw(c);
      if (c.pid < 0) Spawn(c);
    }
    for (auto &c : children_) Send(c, "PAUSE");
    for (auto &c : children_) {
      if (Await(c, "PAUSED", 40000).empty()) Fail(c.name() + " did not pause at a checkpoint");
    }
    for (auto &c : children_) {
      if (c.role != "initiator") continue;
      Send(c, "SYNC");
      std::string r = Await(c, "SYNCED ", 60000);
      if (r != "SYNCED " + std::to_string(a_.targets)) Fail(c.name() + " reached not every target: '" + r + "'");
    }
    Pump(1000);  // what the targets still had to close after the kills
    Sample s{std::chrono::duration<double>(Clock::now() - start_).count(), {}, {}};
    int k = 0;
    for (auto &c : children_) {
      if (!c.stable) continue;
      s.fds[k] = FdCount(c.pid);
      s.rss_kib[k] = RssKiB(c.pid);
      ++k;
    }
    samples_.push_back(s);
    std::printf("checkpoint %7.1f s: target 0 %4ld fds %7ld KiB, initiator 0 %4ld fds %7ld KiB (%lld ms)\n", s.at_s,
                s.fds[0], s.rss_kib[0], s.fds[1], s.rss_kib[1], MsSince(t0));
    std::fflush(stdout);
    if (resume) {
      for (auto &c : children_) Send(c, "RESUME");
    }
  }

  bool Fail(const std::string &what) {
    if (failures_.size() < 1000) failures_.push_back(what);
    std::printf("FAIL %s\n", what.c_str());
    std::fflush(stdout);
    return false;
  }

  // Quits every child (initiators first), checks what must be flat, and
  // prints the totals.
  int Finish() {
    quitting_ = true;
    for (const char *role : {"initiator", "target"}) {
      for (auto &c : children_) {
        if (c.role == role && c.pid > 0) Send(c, "QUIT");
      }
      for (auto &c : children_) {
        const auto t0 = Clock::now();
        while (c.role == role && c.pid > 0 && MsSince(t0) < 15000) Pump(50);
        if (c.role == role && c.pid > 0) {
          Fail(c.name() + " did not quit within 15 s");
          c.killed = true;
          kill(c.pid, SIGKILL);
          Reap(c, true);
        }
      }
    }
    CheckFlat();
    const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
    std::printf("\nsoak: %.0f s, %d targets, %d initiators; killed %lld targets, %lld initiators; froze %lld targets, "
                "%lld initiators\n",
                secs, a_.targets, a_.initiators, kills_["target"], kills_["initiator"], froze_["target"],
                froze_["initiator"]);
    for (auto &[role, m] : totals_) {
      std::printf("%-9s", role.c_str());
      for (auto &[k, v] : m) std::printf(" %s=%lld", k.c_str(), v);
      std::printf("\n");
    }
    std::printf("largest overrun of a deadline: %lld ms (allowed: 1000)\n", max_over_ms_);
    if (ucx_aborts_ > 0) std::printf("processes aborted by UCX's known defect: %lld\n", ucx_aborts_);
    auto &init = totals_["initiator"];
    if (init["verified"] == 0) Fail("no slot was ever checked");
    if (init["ok"] == 0) Fail("no transfer succeeded");
    // Each kind of initiator asked for reached its transport (any: shm, to these same-host targets).
    for (const auto &[kind, on] : std::map<std::string, std::string>{{"tcp", "tcp"}, {"any", "shm"}, {"ucx", "ucx"}}) {
      if (Asks(a_, kind) && init["on_" + on] == 0) Fail("no link was ever seen on " + on);
    }
    if (a_.self_check) return SelfCheckVerdict();
    std::printf("%s: %zu failures\n", failures_.empty() ? "PASSED" : "FAILED", failures_.size());
    for (size_t i = 0; i < failures_.size() && i < 20; ++i) std::printf("  %s\n", failures_[i].c_str());
    return failures_.empty() ? 0 : 1;
  }

  // --self-check: the flipped bytes must have been caught, both kinds, and
  // nothing else may have failed.
  int SelfCheckVerdict() {
    size_t slots = 0, guards = 0, other = 0;
    for (const auto &f : failures_) {
      (f.find("bytes wrong") != std::string::npos ? slots : f.find("guard") != std::string::npos ? guards : other)++;
    }
    bool ok = slots > 0 && guards > 0 && other == 0;
    std::printf("self-check %s: %zu flipped slots and %zu written guards caught, %zu other failures\n",
                ok ? "PASSED" : "FAILED", slots, guards, other);
    for (size_t i = 0; !ok && i < failures_.size() && i < 20; ++i) std::printf("  %s\n", failures_[i].c_str());
    return ok ? 0 : 1;
  }

  void CheckFlat() {
    if (unstable_) {
      std::printf("fds and RSS not checked: a stable process aborted in UCX and started again\n");
      return;
    }
    if (samples_.size() < 3) return;
    const Sample &first = samples_.front(), &warm = samples_[1], &last = samples_.back();
    const char *who[2] = {"target 0", "initiator 0"};
    for (int k = 0; k < 2; ++k) {
      // A target serving ucx initiators holds UCX's sockets of vanished
      // ones for a while: its count is checked at the end only.
      const bool ucx = k == 0 && UcxInitiators() > 0;
      const long slack = kFdSlack + (ucx ? kUcxFdSlack * UcxInitiators() : 0);
      for (const Sample &s : samples_) {
        if (ucx && &s != &last) continue;
        if (std::abs(s.fds[k] - first.fds[k]) > slack) {
          Fail(std::string(who[k]) + " held " + std::to_string(s.fds[k]) + " fds at " + std::to_string(int(s.at_s)) +
               " s, " + std::to_string(first.fds[k]) + " at the first checkpoint");
          break;
        }
      }
      const long limit = warm.rss_kib[k] + std::max<long>(kRssSlackKiB, warm.rss_kib[k] * kRssSlackFraction);
      if (last.rss_kib[k] > limit) {
        Fail(std::string(who[k]) + " RSS grew from " + std::to_string(warm.rss_kib[k]) + " KiB to " +
             std::to_string(last.rss_kib[k]) + " KiB (allowed " + std::to_string(limit) + ")");
      }
    }
  }

  const Args a_;
  std::mt19937_64 rng_;
  Clock::time_point start_;
  std::string ports_;
  std::vector<Child> children_;
  std::vector<Sample> samples_;
  std::vector<std::string> failures_;
  std::map<std::string, std::map<std::string, long long>> totals_;  // role -> counter -> sum over lives
  std::map<std::string, long long> kills_, froze_;
  uint64_t *freezes_ = nullptr;  // each child's freeze count, shared with it (freezes.h)
  long long max_over_ms_ = -1000000;
  long long ucx_aborts_ = 0;  // deaths by UCX's known defect (KnownUcxAbort)
  bool unstable_ = false;     // a stable process was one of them
  bool quitting_ = false;
};

// With ucx among the transports, every child loads the UCX plug-in: the
// targets to offer ucx, the ucx initiators to use it. A setting of the
// caller's own wins; by default UCX moves bytes over loopback tcp.
bool PrepareUcx(const Args &a) {
  if (!Asks(a, "ucx")) return true;
#ifdef HIXL_SOAK_UCX_PLUGIN
  setenv("HIXL_UCX_PLUGIN", HIXL_SOAK_UCX_PLUGIN, 0);
#endif
  if (std::getenv("HIXL_UCX_PLUGIN") == nullptr) {
    std::fprintf(stderr, "hixl_soak: --transports names ucx, but this build has no UCX plug-in "
                         "(set HIXL_UCX_PLUGIN)\n");
    return false;
  }
  setenv("UCX_TLS", "tcp", 0);
  setenv("UCX_NET_DEVICES", "lo", 0);
#if defined(__SANITIZE_THREAD__)
  setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 0);  // as the ucx tests under TSan
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 0);
#endif
#endif
  std::printf("soak: ucx initiators; HIXL_UCX_PLUGIN=%s UCX_TLS=%s UCX_NET_DEVICES=%s\n",
              std::getenv("HIXL_UCX_PLUGIN"), std::getenv("UCX_TLS"), std::getenv("UCX_NET_DEVICES"));
  return true;
}

}  // namespace

int RunOrchestrator(const Args &args) {
  if (!PrepareUcx(args)) return 2;
  return Orchestrator(args).Run();
}

}  // namespace soak
