// link_table.h: the engine's links by remote name, and the channel pool that
// bounds them: at most max_channel links; with waterlines, reaching the high
// mark closes idle links (least recently used first) down to the low mark.
// A link with users is never closed. A remote whose link the pool closed is
// remembered, so that its next use reconnects by itself.
#pragma once

#include <memory>
#include <string>
#include <map>
#include <vector>

#include "common/mutex.h"
#include "engine/link.h"
#include "engine/options.h"
#include "hixl/hixl_types.h"

namespace hixl {

class LinkTable {
 public:
  static constexpr size_t kMaxEvicted = 4096;
  explicit LinkTable(const EngineOptions &opts);

  // The link to `name` with one use held, or an empty ref; then *evicted
  // says whether the pool closed that link and nobody reconnected or
  // disconnected it since (one look: another thread's reconnect cannot fall
  // in between).
  LinkRef Acquire(const std::string &name, bool *evicted = nullptr) EXCLUDES(mu_);
  // Adds a link. Fills `closed` with the idle links the pool takes out to
  // make room (the caller closes them). RESOURCE_EXHAUSTED when the table is
  // full of busy links.
  Status Insert(std::shared_ptr<Link> link, std::vector<std::shared_ptr<Link>> *closed) EXCLUDES(mu_);
  // Removes the link to `name` (only `expected` when given); returns it. A
  // removal without `expected` (the user's Disconnect) also forgets that the
  // pool evicted it, and says in *was_evicted whether it had.
  std::shared_ptr<Link> Remove(const std::string &name, const Link *expected = nullptr, bool *was_evicted = nullptr)
      EXCLUDES(mu_);
  // With waterlines: if the table is at the high mark (links that were all
  // busy when it got there), takes idle links out down to the low mark;
  // the caller closes them.
  void Trim(std::vector<std::shared_ptr<Link>> *closed) EXCLUDES(mu_);
  std::vector<std::shared_ptr<Link>> All() EXCLUDES(mu_);
  std::vector<std::shared_ptr<Link>> TakeAll() EXCLUDES(mu_);

 private:
  bool Idle(const Link &l) const;
  // Takes idle links out, least recently used first, until `keep` remain.
  void EvictLocked(size_t keep, const Link *spare, std::vector<std::shared_ptr<Link>> *closed) REQUIRES(mu_);
  // At the high waterline: evicts down to the low one (never `spare`).
  void TrimLocked(const Link *spare, std::vector<std::shared_ptr<Link>> *closed) REQUIRES(mu_);

  const size_t max_;
  const size_t high_;  // 0: no waterlines
  const size_t low_;
  // Guards the table. Held briefly: links taken out are closed by the
  // caller after it is let go of (closing fails requests, which runs
  // callbacks). Under it, Idle asks each link's channels (atomics, and the
  // shm channel's job-list lock, which comes after this one).
  Mutex mu_;
  std::map<std::string, std::shared_ptr<Link>> links_ GUARDED_BY(mu_);
  // Remotes whose link the pool closed, with when (a count): the latest
  // kMaxEvicted, so that remotes gone for good are not remembered for ever.
  std::map<std::string, uint64_t> evicted_ GUARDED_BY(mu_);
  uint64_t evictions_ GUARDED_BY(mu_) = 0;
};

}  // namespace hixl
