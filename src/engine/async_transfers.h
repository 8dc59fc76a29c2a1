// async_transfers.h: the requests of TransferAsync, from submission until
// GetTransferStatus has reported them finished.
//
// A request's status turns from WAITING only after the engine has let go of
// its buffers: a failed or timed-out request is cancelled on every stream
// and its pins released first. So a user who sees COMPLETED, FAILED or
// TIMEOUT may reuse the buffers at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/completion.h"
#include "common/deadline.h"
#include "common/mutex.h"
#include "engine/batch_check.h"
#include "engine/link.h"
#include "engine/relay.h"
#include "hixl/hixl_types.h"
#include "memory/registry.h"

namespace hixl {

// No lock of its own: the fields are set before Add publishes the request
// (id under AsyncTransfers::mu_), then read only; `link`, `hold` and
// `relay` are let go of once, by Release, which `stage` hands to one thread.
struct AsyncTransfer {
  uint64_t id = 0;
  const void *user_data = nullptr;
  Deadline deadline = Deadline::Never();
  uint32_t timeout_ms = 0;  // what `deadline` was made from, for the log
  LinkRef link;
  // The same link, for polls to lend their thread (Channel::Progress); it
  // never keeps the link in use, and `link` is reset when the request ends.
  std::weak_ptr<Link> poll_link;
  BatchHold hold;  // what its pieces point into
  std::shared_ptr<Relay> relay;  // pieces going through the buffer pool, if any
  std::shared_ptr<Completion> done = std::make_shared<Completion>();
  std::atomic<TransferStatus> status{TransferStatus::WAITING};
  // A request can finish (time out, or fail on a stream that closed) while
  // TransferAsync is still handing its frames to the streams. Its release
  // (cancel, unpin, status) then waits for the hand-off to end, or frames
  // queued after the cancel would still move the caller's bytes.
  enum Stage : int { kSubmitting, kSubmitted, kFinishedEarly };
  std::atomic<int> stage{kSubmitting};
};

class AsyncTransfers {
 public:
  // Registers `t` (assigning its id) and arms its completion: when it
  // finishes, the rest is cancelled, pins and link released, status set,
  // but not before Submitted(t).
  TransferReq Add(const std::shared_ptr<AsyncTransfer> &t) EXCLUDES(mu_);
  // Every frame of `t` has been handed to its streams.
  static void Submitted(const std::shared_ptr<AsyncTransfer> &t);
  // PARAM_INVALID for an unknown or already reported request.
  Status Query(TransferReq req, TransferStatus *status) EXCLUDES(mu_);
  void QueryMany(const GetTransferStatusArgs &args, std::vector<TransferResult> *results) EXCLUDES(mu_);
  // Finishes with TIMEOUT every request past its deadline (costs what is
  // overdue, not what is kept).
  void ExpireOverdue() EXCLUDES(mu_);
  // Finishes every request still waiting with FAILED (Finalize).
  void FailAll() EXCLUDES(mu_);

 private:
  std::vector<std::shared_ptr<AsyncTransfer>> Waiting() EXCLUDES(mu_);
  // Cancels what is left of a finished request, releases it, sets status.
  static void Release(AsyncTransfer &t);
  // A waiting request: times it out when overdue, otherwise helps it along.
  void Poll(AsyncTransfer &t);

  // Guards the two tables; never held while a request is finished,
  // cancelled or helped along (that runs callbacks and takes the links'
  // locks). A request's own state is in atomics, read without it.
  Mutex mu_;
  // Ids are unique in the process (as memory handles are): a request of
  // another engine, or of this one before Finalize, is unknown here, never
  // mistaken for one of ours.
  static std::atomic<uint64_t> next_id_;
  using Table = std::map<uint64_t, std::shared_ptr<AsyncTransfer>>;
  // Takes a reported request out of both tables.
  Table::iterator EraseLocked(Table::iterator it) REQUIRES(mu_);
  Table reqs_ GUARDED_BY(mu_);  // by id: submission order
  // Ids by deadline, for ExpireOverdue to look only at the overdue ones: the
  // finished requests an application has not asked about yet stay in reqs_
  // (they must be reported), and the housekeeper runs every 100 ms.
  std::multimap<Clock::time_point, uint64_t> by_deadline_ GUARDED_BY(mu_);
};

}  // namespace hixl
