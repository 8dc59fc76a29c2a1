#include "engine/notify_inbox.h"

#include "common/log.h"

namespace hixl {

Status NotifyInbox::Push(uint64_t link, const std::string &host, std::string name, std::string msg) {
  MutexLock lock(&mu_);
  if (entries_.size() >= kMaxUnread) {
    HIXL_LOGW_RL("notify '%s' refused: %zu notifies are unread", LogSafe(name).c_str(), entries_.size());
    return NOTIFY_FAILED;
  }
  size_t &n = unread_[link];
  if (n >= kMaxUnreadPerLink) {
    HIXL_LOGW_RL("notify '%s' refused: link %llx already has %zu unread notifies", LogSafe(name).c_str(),
              static_cast<unsigned long long>(link), n);
    return NOTIFY_FAILED;
  }
  size_t &from_host = unread_by_host_[host];
  if (from_host >= kMaxUnreadPerHost) {
    HIXL_LOGW_RL("notify '%s' refused: %s already has %zu unread notifies", LogSafe(name).c_str(), LogSafe(host).c_str(),
              from_host);
    return NOTIFY_FAILED;
  }
  ++n;
  ++from_host;
  entries_.push_back({link, std::move(name), std::move(msg)});
  return SUCCESS;
}

std::vector<NotifyDesc> NotifyInbox::Drain() {
  std::vector<Entry> taken;
  {
    MutexLock lock(&mu_);
    taken.swap(entries_);
    unread_.clear();
    unread_by_host_.clear();
  }
  std::vector<NotifyDesc> out;
  out.reserve(taken.size());
  for (auto &e : taken) {
    NotifyDesc d;
    d.name = AscendString(e.name.data(), e.name.size());
    d.notify_msg = AscendString(e.msg.data(), e.msg.size());
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace hixl
