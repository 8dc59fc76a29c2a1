#include "engine/async_transfers.h"

#include <algorithm>

#include "common/log.h"

namespace hixl {
namespace {

TransferStatus ToTransferStatus(Status s) {
  if (s == SUCCESS) return TransferStatus::COMPLETED;
  if (s == TIMEOUT) return TransferStatus::TIMEOUT;
  return TransferStatus::FAILED;
}

}  // namespace

std::atomic<uint64_t> AsyncTransfers::next_id_{1};

TransferReq AsyncTransfers::Add(const std::shared_ptr<AsyncTransfer> &t) {
  {
    MutexLock lock(&mu_);
    t->id = next_id_.fetch_add(1, std::memory_order_relaxed);
    reqs_[t->id] = t;
    if (t->deadline.at() != Deadline::Never().at()) by_deadline_.emplace(t->deadline.at(), t->id);
  }
  // The callback owns `t` until it runs, which breaks the t -> done -> t cycle.
  t->done->SetOnFinish([t] {
    int submitting = AsyncTransfer::kSubmitting;
    if (t->stage.compare_exchange_strong(submitting, AsyncTransfer::kFinishedEarly)) return;  // Submitted releases
    Release(*t);
  });
  return reinterpret_cast<TransferReq>(static_cast<uintptr_t>(t->id));
}

void AsyncTransfers::Submitted(const std::shared_ptr<AsyncTransfer> &t) {
  int submitting = AsyncTransfer::kSubmitting;
  if (t->stage.compare_exchange_strong(submitting, AsyncTransfer::kSubmitted)) return;  // still running
  Release(*t);  // it finished while its frames were being handed over
}

void AsyncTransfers::Release(AsyncTransfer &t) {
  Status s = SUCCESS;
  t.done->Poll(&s);
  if (s != SUCCESS) {
    t.link->data().Cancel(t.done.get());
    if (t.relay) t.relay->Cancel();
    // A timeout is this layer's finding; other causes were logged where
    // they happened (a stream closed, a copy failed).
    if (s == TIMEOUT) {
      HIXL_LOGE("TransferAsync request %llu to %s: %s after %u ms", static_cast<unsigned long long>(t.id),
                t.link->name.c_str(), StatusText(s).c_str(), t.timeout_ms);
    } else {
      HIXL_LOGI("TransferAsync request %llu to %s: %s", static_cast<unsigned long long>(t.id), t.link->name.c_str(),
                StatusText(s).c_str());
    }
  }
  t.hold.Release();
  t.relay.reset();
  t.link.Reset();
  t.status.store(ToTransferStatus(s));
}

Status AsyncTransfers::Query(TransferReq req, TransferStatus *status) {
  auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(req));
  std::shared_ptr<AsyncTransfer> t;
  {
    MutexLock lock(&mu_);
    auto it = reqs_.find(id);
    if (it == reqs_.end()) {
      HIXL_LOGE("GetTransferStatus: request %p is unknown or was already reported finished", req);
      return PARAM_INVALID;
    }
    *status = it->second->status.load();
    if (*status != TransferStatus::WAITING) {  // finished already: report and release in one go
      EraseLocked(it);
      return SUCCESS;
    }
    t = it->second;
  }
  Poll(*t);
  *status = t->status.load();
  if (*status != TransferStatus::WAITING) {
    // Another thread polling the same request may have seen it finish too:
    // only the one that takes it out of the table reports it.
    MutexLock lock(&mu_);
    auto it = reqs_.find(id);
    if (it == reqs_.end()) {
      HIXL_LOGE("GetTransferStatus: request %p was reported finished to another caller meanwhile", req);
      return PARAM_INVALID;
    }
    EraseLocked(it);
  }
  return SUCCESS;
}

void AsyncTransfers::Poll(AsyncTransfer &t) {
  if (t.deadline.Expired()) {
    t.done->Finish(TIMEOUT);
  } else if (auto link = t.poll_link.lock()) {
    link->data().Progress();
  }
}

void AsyncTransfers::QueryMany(const GetTransferStatusArgs &args, std::vector<TransferResult> *results) {
  {
    // One pass over the waiting requests: time out the overdue ones, then
    // lend this thread once to each link that the others wait on.
    std::vector<std::shared_ptr<Link>> links;
    for (const auto &t : Waiting()) {
      if (t->deadline.Expired()) {
        t->done->Finish(TIMEOUT);
        continue;
      }
      auto link = t->poll_link.lock();
      if (link && std::find(links.begin(), links.end(), link) == links.end()) links.push_back(std::move(link));
    }
    for (const auto &link : links) link->data().Progress();
  }
  results->clear();
  MutexLock lock(&mu_);
  for (auto it = reqs_.begin(); it != reqs_.end() && results->size() < args.max_query_count;) {
    TransferStatus st = it->second->status.load();
    if (st == TransferStatus::WAITING && args.skip_waiting) {
      ++it;
      continue;
    }
    TransferResult r;
    r.req = reinterpret_cast<TransferReq>(static_cast<uintptr_t>(it->first));
    r.user_data = it->second->user_data;
    r.status = st;
    results->push_back(r);
    it = st == TransferStatus::WAITING ? std::next(it) : EraseLocked(it);
  }
}

AsyncTransfers::Table::iterator AsyncTransfers::EraseLocked(Table::iterator it) {
  auto [first, last] = by_deadline_.equal_range(it->second->deadline.at());
  for (auto d = first; d != last; ++d) {
    if (d->second == it->first) {
      by_deadline_.erase(d);
      break;
    }
  }
  return reqs_.erase(it);
}

std::vector<std::shared_ptr<AsyncTransfer>> AsyncTransfers::Waiting() {
  std::vector<std::shared_ptr<AsyncTransfer>> out;
  MutexLock lock(&mu_);
  for (const auto &[id, t] : reqs_) {
    if (t->status.load() == TransferStatus::WAITING) out.push_back(t);
  }
  return out;
}

void AsyncTransfers::ExpireOverdue() {
  std::vector<std::shared_ptr<AsyncTransfer>> overdue;
  {
    MutexLock lock(&mu_);
    const Clock::time_point now = Clock::now();
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      auto it = reqs_.find(by_deadline_.begin()->second);  // gone: reported already
      if (it != reqs_.end() && it->second->status.load() == TransferStatus::WAITING) overdue.push_back(it->second);
      by_deadline_.erase(by_deadline_.begin());
    }
  }
  // Finish outside the table lock: finishing cancels on the link's streams.
  for (const auto &t : overdue) t->done->Finish(TIMEOUT);
}

void AsyncTransfers::FailAll() {
  for (const auto &t : Waiting()) t->done->Finish(FAILED);
}

}  // namespace hixl
