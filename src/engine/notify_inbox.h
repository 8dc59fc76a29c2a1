// notify_inbox.h: notifies received from peers, until GetNotifies takes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "hixl/hixl_types.h"

namespace hixl {

class NotifyInbox {
 public:
  // Unread notifies one link may have before further ones are refused; all
  // links from one address together (a peer names its links, so it could
  // open many: it takes at most a quarter, never all of the room); and all
  // links.
  static constexpr size_t kMaxUnreadPerLink = 4096;
  static constexpr size_t kMaxUnreadPerHost = 16384;
  static constexpr size_t kMaxUnread = 65536;

  // SUCCESS, or NOTIFY_FAILED when `link` already has kMaxUnreadPerLink
  // unread, its `host` (the peer's address) kMaxUnreadPerHost, or the inbox
  // kMaxUnread.
  Status Push(uint64_t link, const std::string &host, std::string name, std::string msg) EXCLUDES(mu_);
  // Every notify received so far, in arrival order; the inbox forgets them.
  std::vector<NotifyDesc> Drain() EXCLUDES(mu_);

 private:
  struct Entry {
    uint64_t link;
    std::string name;
    std::string msg;
  };
  // Guards the notifies and their counts: I/O threads push, the user's
  // thread drains.
  Mutex mu_;
  std::vector<Entry> entries_ GUARDED_BY(mu_);
  std::map<uint64_t, size_t> unread_ GUARDED_BY(mu_);  // by link
  std::map<std::string, size_t> unread_by_host_ GUARDED_BY(mu_);
};

}  // namespace hixl
