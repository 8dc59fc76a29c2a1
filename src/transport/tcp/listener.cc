#include "transport/tcp/listener.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/log.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/target_stream.h"

namespace hixl::tcp {

Listener::Listener(int fd, IoWorker *home, const std::vector<std::unique_ptr<IoWorker>> *workers, TargetContext *ctx)
    : fd_(fd), home_(home), workers_(workers), ctx_(ctx) {}

Listener::~Listener() {
  if (fd_ >= 0) close(fd_);
}

void Listener::OnEvents(uint32_t) {
  for (int i = 0; i < 64 && fd_ >= 0; ++i) {
    int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of fds (EMFILE, ENFILE) or memory: the pending connection stays
      // there, so the socket stays readable and the next accept fails the
      // same way. Pause rather than spin (and flood the log).
      HIXL_LOGE("accept failed: %s; not accepting for %lld ms", std::strerror(errno),
                static_cast<long long>(kBackoff.count()));
      home_->Modify(this, 0);
      home_->PostAt(std::chrono::steady_clock::now() + kBackoff, [w = weak_from_this()] {
        if (auto l = w.lock()) l->Resume();
      });
      return;
    }
    TuneSocket(fd);
    std::string peer = PeerName(fd);
    HIXL_LOGD("accepted a stream from %s", peer.c_str());
    IoWorker *w = PickWorker(*workers_);
    auto stream = std::make_shared<TargetStream>(fd, w, ctx_, peer);
    pending_.push_back({stream, peer.substr(0, peer.rfind(':'))});
    w->Add(std::move(stream), EPOLLIN);
    LimitPending();
  }
}

void Listener::LimitPending() {
  std::erase_if(pending_, [](const Pending &p) {
    auto s = p.stream.lock();
    return s == nullptr || !s->awaiting_hello();
  });
  while (pending_.size() > kMaxPendingHandshakes) {
    // The oldest of the address with the most waiting: a flood from one
    // address drops its own connections, not the handshakes of others.
    std::map<std::string, size_t> per_source;
    const std::string *busiest = nullptr;
    for (const auto &p : pending_) {
      size_t n = ++per_source[p.source];
      if (busiest == nullptr || n > per_source[*busiest]) busiest = &p.source;
    }
    auto victim = std::find_if(pending_.begin(), pending_.end(),
                               [&](const Pending &p) { return p.source == *busiest; });
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

void Listener::Resume() {
  if (fd_ >= 0 && !home_->Modify(this, EPOLLIN)) HIXL_LOGE("listener: epoll MOD failed: %s", std::strerror(errno));
}

void Listener::OnShutdown() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace hixl::tcp
