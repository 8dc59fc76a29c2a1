#include "transport/tcp/listener.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/fork_fds.h"
#include "common/log.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/target_stream.h"

namespace hixl::tcp {

Listener::Listener(int fd, IoWorker *home, const std::vector<std::unique_ptr<IoWorker>> *workers, PeerHandler *handler)
    : fd_(fd), home_(home), workers_(workers), handler_(handler) {}

Listener::~Listener() {
  CloseKeptFd(fd_);
}

void Listener::OnEvents(uint32_t) {
  for (int i = 0; i < 64 && fd_ >= 0; ++i) {
    const int fd = OpenKeptFd([this] { return accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC); });
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of fds (EMFILE, ENFILE) or memory: the pending connection stays
      // there, so the socket stays readable and the next accept fails the
      // same way. Pause rather than spin (and flood the log).
      const int err = errno;
      std::string source;
      const size_t evicted = err == EMFILE || err == ENFILE ? EvictQuiet(kEvictBatch, &source) : 0;
      if (evicted > 0) {
        HIXL_LOGW_RL("accept failed: %s; closing %zu quiet stream(s) of %s, the address holding the most, to make room",
                  std::strerror(err), evicted, source.c_str());
        PauseFor(kEvictPause);
      } else {
        HIXL_LOGE_RL("accept failed: %s; not accepting for %lld ms", std::strerror(err),
                  static_cast<long long>(kBackoff.count()));
        PauseFor(kBackoff);
      }
      return;
    }
    TuneSocket(fd);
    std::string peer = PeerName(fd);
    HIXL_LOGD("accepted a stream from %s", peer.c_str());
    IoWorker *w = PickWorker(*workers_);
    // Not make_shared: the weak_ptrs of pending_ and accepted_ would keep a
    // closed stream's whole memory (its 16 KiB receive buffer among it) until
    // they are pruned, so each new stream got memory never touched before and
    // paid its page faults: a Connect took 0.6 ms instead of 0.33.
    std::shared_ptr<TargetStream> stream(new TargetStream(fd, w, handler_, peer));
    std::string source = peer.substr(0, peer.rfind(':'));
    pending_.push_back({stream, source});
    accepted_.push_back({stream, std::move(source)});
    if (accepted_.size() >= prune_at_) {
      std::erase_if(accepted_, [](const Tracked &a) { return a.stream.expired(); });
      prune_at_ = std::max<size_t>(64, 2 * accepted_.size());
    }
    w->Add(std::move(stream), EPOLLIN);
    LimitPending();
  }
}

const std::string *Listener::Busiest(const std::deque<Tracked> &list) {
  std::map<std::string, size_t> per_source;
  const std::string *busiest = nullptr;
  for (const auto &t : list) {
    size_t n = ++per_source[t.source];
    if (busiest == nullptr || n > per_source[*busiest]) busiest = &t.source;
  }
  return busiest;
}

void Listener::LimitPending() {
  std::erase_if(pending_, [](const Tracked &p) {
    auto s = p.stream.lock();
    return s == nullptr || !s->awaiting_hello();
  });
  while (pending_.size() > kMaxPendingHandshakes) {
    // The oldest of the address with the most waiting: a flood from one
    // address drops its own connections, not the handshakes of others.
    const std::string *busiest = Busiest(pending_);
    auto victim = std::find_if(pending_.begin(), pending_.end(),
                               [&](const Tracked &p) { return p.source == *busiest; });
    if (auto s = victim->stream.lock()) {
      // On the stream's own thread, which may have finished it meanwhile.
      s->worker()->Post([s] {
        s->DropIfNoHello("more than " + std::to_string(kMaxPendingHandshakes) +
                         " connections wait for a handshake; dropping the oldest of the busiest address");
      });
    }
    pending_.erase(victim);
  }
}

size_t Listener::EvictQuiet(size_t want, std::string *source) {
  std::erase_if(accepted_, [](const Tracked &a) { return a.stream.expired(); });
  // Only the address holding the most streams gives any up: the peer that
  // used up the fds pays for them, not the others (if its streams are all in
  // use, nobody's are closed).
  const std::string *busiest = Busiest(accepted_);
  if (busiest == nullptr) return 0;
  const std::string src = *busiest;
  const int64_t quiet_before =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count() -
      std::chrono::duration_cast<std::chrono::milliseconds>(TargetStream::kEvictQuiet).count();
  size_t posted = 0;
  for (const auto &a : accepted_) {
    if (posted == want) break;
    if (a.source != src) continue;
    auto s = a.stream.lock();
    if (s == nullptr || !s->evictable() || s->last_active_ms() > quiet_before) continue;
    // On the stream's own thread, which checks again: bytes may have come.
    s->worker()->Post([s, src] {
      s->EvictIfQuiet("out of fds: closing quiet streams of " + src + ", the address holding the most");
    });
    ++posted;
  }
  if (posted > 0) *source = src;
  return posted;
}

void Listener::PauseFor(std::chrono::milliseconds pause) {
  home_->Modify(this, 0);
  home_->PostAt(std::chrono::steady_clock::now() + pause, [w = weak_from_this()] {
    if (auto l = w.lock()) l->Resume();
  });
}

void Listener::Resume() {
  if (fd_ >= 0 && !home_->Modify(this, EPOLLIN)) HIXL_LOGE("listener: epoll MOD failed: %s", std::strerror(errno));
}

void Listener::OnShutdown() {
  CloseKeptFd(fd_);
  fd_ = -1;
}

}  // namespace hixl::tcp
