// link.h: the initiator's side of a link to one remote engine, and a
// reference that marks it in use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/deadline.h"
#include "common/mutex.h"
#include "control/control_link.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"
#include "transport/transport.h"

namespace hixl {

// Where the control link's REVOKE handler finds the link's channel
// (Channel::BeforeRevokeAck): the handler runs on an I/O thread while the
// link is being made and while it goes away.
struct RevokeSeam {
  // Set once the link has its channel; cleared before the channel goes.
  void Set(Channel *c) {
    MutexLock lock(&mu);
    channel = c;
  }
  // Asks the channel, or acknowledges at once while there is none (no
  // batch of the link can touch the region then).
  void BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) {
    MutexLock lock(&mu);
    if (channel != nullptr) {
      channel->BeforeRevokeAck(region, std::move(ack));
    } else {
      ack();
    }
  }
  // Held while the channel is asked, so that it cannot go meanwhile.
  Mutex mu;
  Channel *channel GUARDED_BY(mu) = nullptr;
};

struct Link {
  ~Link() {
    // The channel goes first: its copies in flight are cancelled while the
    // control stream, which they check, is still there.
    revoke_seam->Set(nullptr);
    channel.reset();
    control.reset();
  }
  // Close fails what is in flight on both; the remote sees the streams end.
  void Close(const char *why) {
    if (channel) channel->Close(why);
    if (control) control->Close(why);
  }
  bool broken() const { return (control && control->broken()) || (channel && channel->broken()); }
  bool idle() const { return (!control || control->idle()) && (!channel || channel->idle()); }
  Channel &data() const { return *channel; }
  void Touch() { last_used_ms.store(SteadyMillis(), std::memory_order_relaxed); }

  std::string name;  // canonical remote address, the key of the link table
  // The target's table, shared with the control link, which keeps it (see
  // ControlLink::Params::regions).
  std::shared_ptr<RemoteRegions> remote_regions = std::make_shared<RemoteRegions>();
  // Handshake, region tables, notifies, revocations.
  std::unique_ptr<ControlLink> control;
  // The data path, made by `transport` (which outlives every link).
  std::unique_ptr<Channel> channel;
  // Shared with the control link's REVOKE handler (see RevokeSeam).
  std::shared_ptr<RevokeSeam> revoke_seam = std::make_shared<RevokeSeam>();
  Transport *transport = nullptr;
  // Calls and async transfers using the link now; the channel pool never
  // closes a link with users.
  std::atomic<int> users{0};
  std::atomic<int64_t> last_used_ms{0};
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
