// link.h: the initiator's side of a link to one remote engine, and a
// reference that marks it in use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/deadline.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"
#include "transport/tcp/tcp_link.h"

namespace hixl {

struct Link {
  std::string name;  // canonical remote address, the key of the link table
  // Control (handshake, notifies, region tables, revocations) always, and
  // data unless `shm` carries it.
  std::unique_ptr<tcp::TcpLink> tcp;
  std::unique_ptr<Channel> shm;  // same-host data path, when usable
  RemoteRegions remote_regions;
  // Calls and async transfers using the link now; the channel pool never
  // closes a link with users.
  std::atomic<int> users{0};
  std::atomic<int64_t> last_used_ms{0};

  void Touch() { last_used_ms.store(SteadyMillis(), std::memory_order_relaxed); }
  bool broken() const { return tcp->broken(); }
  Channel &data() const { return shm ? *shm : static_cast<Channel &>(*tcp); }
};

// Holds one use of a link (users + 1) for its lifetime.
class LinkRef {
 public:
  LinkRef() = default;
  // Only the release stamps last_used_ms: the channel pool looks at it only
  // for links without users, i.e. after their last Reset.
  explicit LinkRef(std::shared_ptr<Link> link) : link_(std::move(link)) {
    if (link_) link_->users.fetch_add(1);
  }
  LinkRef(LinkRef &&other) noexcept : link_(std::move(other.link_)) {}
  LinkRef &operator=(LinkRef &&other) noexcept {
    if (this != &other) {
      Reset();
      link_ = std::move(other.link_);
    }
    return *this;
  }
  LinkRef(const LinkRef &) = delete;
  LinkRef &operator=(const LinkRef &) = delete;
  ~LinkRef() { Reset(); }

  void Reset() {
    if (link_) {
      link_->Touch();
      link_->users.fetch_sub(1);
      link_.reset();
    }
  }
  Link *operator->() const { return link_.get(); }
  Link &operator*() const { return *link_; }
  explicit operator bool() const { return link_ != nullptr; }
  const std::shared_ptr<Link> &shared() const { return link_; }

 private:
  std::shared_ptr<Link> link_;
};

}  // namespace hixl
