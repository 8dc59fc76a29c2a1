#include "engine/link_table.h"

#include <algorithm>
#include <cmath>

#include "common/log.h"

namespace hixl {
namespace {

size_t Mark(size_t max, double fraction) {
  return std::max<size_t>(1, static_cast<size_t>(std::floor(static_cast<double>(max) * fraction)));
}

}  // namespace

LinkTable::LinkTable(const EngineOptions &opts)
    : max_(opts.max_channel),
      high_(opts.has_waterlines ? Mark(opts.max_channel, opts.high_waterline) : 0),
      low_(opts.has_waterlines ? Mark(opts.max_channel, opts.low_waterline) : 0) {}

LinkRef LinkTable::Acquire(const std::string &name, bool *evicted) {
  MutexLock lock(&mu_);
  auto it = links_.find(name);
  if (evicted != nullptr) *evicted = it == links_.end() && evicted_.count(name) != 0;
  return it == links_.end() ? LinkRef() : LinkRef(it->second);
}

// A link without its TCP part exists only in unit tests of the table.
bool LinkTable::Idle(const Link &l) const { return l.users.load() == 0 && l.idle(); }

void LinkTable::EvictLocked(size_t keep, const Link *spare, std::vector<std::shared_ptr<Link>> *closed) {
  std::vector<std::shared_ptr<Link>> idle;
  for (const auto &[name, l] : links_) {
    if (l.get() != spare && Idle(*l)) idle.push_back(l);
  }
  std::sort(idle.begin(), idle.end(), [](const auto &a, const auto &b) {
    return a->last_used_ms.load() < b->last_used_ms.load();
  });
  for (const auto &l : idle) {
    if (links_.size() <= keep) break;
    links_.erase(l->name);
    evicted_[l->name] = ++evictions_;
    if (evicted_.size() > kMaxEvicted) {
      evicted_.erase(std::min_element(evicted_.begin(), evicted_.end(),
                                      [](const auto &a, const auto &b) { return a.second < b.second; }));
    }
    closed->push_back(l);
    HIXL_LOGI("channel pool: closing idle link %s (%zu links left)", l->name.c_str(), links_.size());
  }
}

void LinkTable::TrimLocked(const Link *spare, std::vector<std::shared_ptr<Link>> *closed) {
  if (high_ > 0 && links_.size() >= high_) EvictLocked(low_, spare, closed);
}

Status LinkTable::Insert(std::shared_ptr<Link> link, std::vector<std::shared_ptr<Link>> *closed) {
  MutexLock lock(&mu_);
  if (links_.size() >= max_) EvictLocked(max_ - 1, nullptr, closed);
  if (links_.size() >= max_) {
    HIXL_LOGE("channel pool: %zu links, all busy, is channel_pool.max_channel; cannot add %s", links_.size(),
              link->name.c_str());
    return RESOURCE_EXHAUSTED;
  }
  evicted_.erase(link->name);
  const Link *added = link.get();
  links_[link->name] = std::move(link);
  TrimLocked(added, closed);
  return SUCCESS;
}

std::shared_ptr<Link> LinkTable::Remove(const std::string &name, const Link *expected, bool *was_evicted) {
  MutexLock lock(&mu_);
  if (expected == nullptr) {
    bool evicted = evicted_.erase(name) != 0;
    if (was_evicted != nullptr) *was_evicted = evicted;
  }
  auto it = links_.find(name);
  if (it == links_.end() || (expected != nullptr && it->second.get() != expected)) return nullptr;
  auto l = std::move(it->second);
  links_.erase(it);
  return l;
}

void LinkTable::Trim(std::vector<std::shared_ptr<Link>> *closed) {
  MutexLock lock(&mu_);
  TrimLocked(nullptr, closed);
}

std::vector<std::shared_ptr<Link>> LinkTable::All() {
  MutexLock lock(&mu_);
  std::vector<std::shared_ptr<Link>> out;
  for (const auto &[name, l] : links_) out.push_back(l);
  return out;
}

std::vector<std::shared_ptr<Link>> LinkTable::TakeAll() {
  MutexLock lock(&mu_);
  std::vector<std::shared_ptr<Link>> out;
  for (auto &[name, l] : links_) out.push_back(std::move(l));
  links_.clear();
  evicted_.clear();
  return out;
}

}  // namespace hixl
