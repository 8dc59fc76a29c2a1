// engine_transfer.cc: batches: descriptor checks, TransferSync,
// TransferAsync and the status of async requests.
#include <cinttypes>

#include "common/log.h"
#include "engine/batch_check.h"
#include "engine/engine.h"
#include "memory/memory_kind.h"
#include "wire/frame.h"

namespace hixl {
namespace {

const char *OpName(TransferOp op) { return op == READ ? "READ" : "WRITE"; }

// PARAM_INVALID (logged) when this process may not `need` (PageAccess) some
// of the unregistered memory the relay would copy.
Status CheckRelayedAccess(const Link &link, TransferOp op, const std::vector<Piece> &relayed, unsigned need) {
  if (relayed.empty()) return SUCCESS;
  // BatchCheck checked registered memory only. The relay copies unregistered
  // memory with memcpy, which would fault the whole process on a READ into a
  // read-only buffer (or a WRITE from an unreadable one): refuse it instead.
  // (Registered memory staged by its kind was checked as registered.)
  std::vector<MemRange> ranges;
  ranges.reserve(relayed.size());
  for (const Piece &p : relayed) {
    if (p.local_region == nullptr) ranges.push_back({p.local, p.len});
  }
  if (ranges.empty()) return SUCCESS;
  // Unregistered memory is taken for host memory (a staging copy of it is
  // what moves).
  const size_t bad = HostMemory().FirstInaccessible(ranges.data(), ranges.size(), need);
  if (bad == ranges.size()) return SUCCESS;
  HIXL_LOGE("Transfer %s %s: local range 0x%" PRIxPTR "+%zu (not registered: it would be copied through the buffer "
            "pool) is memory this process may not %s; nothing of the batch was moved",
            OpName(op), link.name.c_str(), ranges[bad].addr, ranges[bad].len, op == READ ? "write" : "read");
  return PARAM_INVALID;
}

}  // namespace

Status Engine::CheckTransferArgs(const char *call, const std::string &remote, TransferOp op, std::string *key) {
  Status s = RemoteKey(call, remote, key);
  if (s != SUCCESS) return s;
  if (op != READ && op != WRITE) {
    HIXL_LOGE("%s %s: unknown operation %d", call, key->c_str(), static_cast<int>(op));
    return PARAM_INVALID;
  }
  return SUCCESS;
}

Status Engine::RefreshRemoteRegions(const std::shared_ptr<Link> &link, Deadline deadline) {
  return link->control->FetchRegions(deadline);
}

Status Engine::GetRemoteMems(const std::string &remote, std::vector<MemDesc> &mems, int32_t timeout_ms) {
  std::string key;
  Status s = RemoteKey("GetRemoteMems", remote, &key);
  if (s != SUCCESS) return s;
  if ((s = CheckTimeout("GetRemoteMems", key, timeout_ms)) != SUCCESS) return s;
  Deadline deadline = Deadline::AfterMillis(timeout_ms);
  LinkRef link;
  if ((s = UseLink("GetRemoteMems", key, deadline, &link)) != SUCCESS) return s;
  if ((s = RefreshRemoteRegions(link.shared(), deadline)) != SUCCESS) {
    HIXL_LOGE("GetRemoteMems %s: the remote's region table did not come: %s", key.c_str(), StatusText(s).c_str());
    return s;
  }
  mems.clear();
  for (const auto &r : link->remote_regions->Regions()) {
    MemDesc m{};
    m.addr = static_cast<uintptr_t>(r->range.addr);
    m.len = static_cast<size_t>(r->range.len);
    mems.push_back(m);
  }
  return SUCCESS;
}

Status Engine::PrepareBatch(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<TransferOpDesc> &descs,
                            Deadline deadline, BatchHold *hold, std::vector<Piece> *direct,
                            std::vector<Piece> *relayed) {
  auto table = registry_.Snapshot();
  const unsigned local_need = op == READ ? kPageWrite : kPageRead;
  hold->tables.push_back(link->remote_regions->Snapshot());
  const Channel &channel = link->data();
  BatchCheck check(*table, *hold->tables.back(), pool_.enabled(), local_need, channel.local_kinds(),
                   channel.remote_kinds());
  bool refreshed = false;
  for (size_t from = 0;;) {
    BatchCheck::Result r = check.Run(descs, from, &hold->pins, direct, relayed);
    if (r.verdict == BatchCheck::Verdict::kOk) return CheckRelayedAccess(*link, op, *relayed, local_need);
    const TransferOpDesc &d = descs[r.index];
    if (r.verdict == BatchCheck::Verdict::kRemoteUnknown && !refreshed) {
      // Maybe registered at the remote after our copy was taken: ask again,
      // once per batch, and go on from this descriptor.
      refreshed = true;
      Status s = RefreshRemoteRegions(link, deadline);
      if (s != SUCCESS) return s;
      hold->tables.push_back(link->remote_regions->Snapshot());
      check.SetRemote(*hold->tables.back());
      from = r.index;
      continue;
    }
    switch (r.verdict) {
      case BatchCheck::Verdict::kBadDescriptor:
        HIXL_LOGE("Transfer %s %s: descriptor %zu (local=0x%" PRIxPTR " remote=0x%" PRIxPTR
                  " len=%zu) is empty, null, wraps around, or takes the batch past 2^64 bytes",
                  OpName(op), link->name.c_str(), r.index, d.local_addr, d.remote_addr, d.len);
        break;
      case BatchCheck::Verdict::kLocalUnregistered:
        HIXL_LOGE("Transfer %s %s: descriptor %zu local range 0x%" PRIxPTR "+%zu is not inside a registered region "
                  "(and the buffer pool is off)",
                  OpName(op), link->name.c_str(), r.index, d.local_addr, d.len);
        break;
      case BatchCheck::Verdict::kLocalNoAccess:
        HIXL_LOGE("Transfer %s %s: descriptor %zu local range 0x%" PRIxPTR "+%zu is registered memory this process "
                  "may not %s (see its protection)",
                  OpName(op), link->name.c_str(), r.index, d.local_addr, d.len, op == READ ? "write" : "read");
        break;
      case BatchCheck::Verdict::kLocalNeedsStaging:
        HIXL_LOGE("Transfer %s %s: descriptor %zu local range 0x%" PRIxPTR "+%zu is device memory, which the link's "
                  "transport %s moves only through the buffer pool, and the buffer pool is off",
                  OpName(op), link->name.c_str(), r.index, d.local_addr, d.len, channel.name());
        break;
      case BatchCheck::Verdict::kRemoteKind:
        HIXL_LOGE("Transfer %s %s: descriptor %zu remote range 0x%" PRIxPTR "+%zu is device memory at the remote, "
                  "which the link's transport %s cannot reach (the link chose it before that memory was registered: "
                  "Disconnect and Connect again); nothing of the batch was moved",
                  OpName(op), link->name.c_str(), r.index, d.remote_addr, d.len, channel.name());
        break;
      default:
        HIXL_LOGE("Transfer %s %s: descriptor %zu remote range 0x%" PRIxPTR "+%zu is outside every region "
                  "registered at the remote; nothing of the batch was moved",
                  OpName(op), link->name.c_str(), r.index, d.remote_addr, d.len);
        break;
    }
    return PARAM_INVALID;
  }
}

std::shared_ptr<Relay> Engine::MakeRelay(const std::shared_ptr<Link> &link, TransferOp op,
                                         std::vector<Piece> relayed, const std::shared_ptr<Completion> &done,
                                         Deadline deadline) {
  if (relayed.empty()) return nullptr;
  return Relay::Create(link, &link->data(), &pool_, op == WRITE, std::move(relayed), done, deadline);
}

void Engine::StartBatch(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<Piece> &direct,
                        const std::shared_ptr<Relay> &relay, const std::shared_ptr<Completion> &done,
                        Deadline deadline, bool caller_waits) {
  // A guard part, so that the batch cannot count as done before every part
  // of it has been added.
  done->AddParts(1);
  if (relay != nullptr) relay->Run();
  if (!direct.empty()) {
    link->data().Submit(op == WRITE, direct.data(), direct.size(), done, deadline, caller_waits && relay == nullptr);
  }
  done->PartSkipped();
}

Status Engine::Finish(Channel &channel, const std::shared_ptr<Completion> &done, Deadline deadline, Relay *relay) {
  Status s = done->Wait(deadline);
  if (s == SUCCESS) return s;
  // Finished before the cancel, whose dropped parts complete as FAILED: the
  // verdict is the timeout (unless every part completed meanwhile, in which
  // case the completion's own verdict stands).
  done->Finish(s);
  channel.Cancel(done.get());
  if (relay != nullptr) relay->Cancel();
  Status final_status = s;
  done->Poll(&final_status);
  return final_status;
}

Status Engine::TransferSync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                            int32_t timeout_ms) {
  std::string key;
  Status s = CheckTransferArgs("TransferSync", remote, op, &key);
  if (s != SUCCESS) return s;
  if ((s = CheckTimeout("TransferSync", key, timeout_ms)) != SUCCESS) return s;
  if (descs.empty()) return SUCCESS;
  Deadline deadline = Deadline::AfterMillis(timeout_ms);
  LinkRef link;
  s = UseLink("TransferSync", key, deadline, &link);
  if (s != SUCCESS) return s;
  BatchHold hold;
  std::vector<Piece> direct, relayed;
  s = PrepareBatch(link.shared(), op, descs, deadline, &hold, &direct, &relayed);
  if (s != SUCCESS) return s;
  auto done = std::make_shared<Completion>();
  auto relay = MakeRelay(link.shared(), op, std::move(relayed), done, deadline);
  StartBatch(link.shared(), op, direct, relay, done, deadline, /*caller_waits=*/true);
  s = Finish(link->data(), done, deadline, relay.get());
  if (s == TIMEOUT) {
    HIXL_LOGE("TransferSync %s %s: %zu descriptor(s) not done within %d ms", OpName(op), key.c_str(), descs.size(),
              timeout_ms);
  } else if (s == PARAM_INVALID) {
    HIXL_LOGE("TransferSync %s %s: the remote refused every frame: a remote range is no longer registered there "
              "(deregistered after our copy of its table); nothing of the batch moved",
              OpName(op), key.c_str());
  } else if (s != SUCCESS) {
    // The cause (a stream closed, a copy failed) was logged where it happened.
    HIXL_LOGI("TransferSync %s %s: %s", OpName(op), key.c_str(), StatusText(s).c_str());
  }
  return s;
}

Status Engine::TransferAsync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                             const TransferArgs &args, TransferReq &req) {
  std::string key;
  Status s = CheckTransferArgs("TransferAsync", remote, op, &key);
  if (s != SUCCESS) return s;
  auto t = std::make_shared<AsyncTransfer>();
  t->user_data = args.user_data;
  if (descs.empty()) {
    // As TransferSync: nothing to move is SUCCESS, connected or not; the
    // request reports COMPLETED at its first query.
    req = async_.Add(t);
    t->done->Finish(SUCCESS);
    AsyncTransfers::Submitted(t);
    return SUCCESS;
  }
  const Clock::time_point now = Clock::now();
  t->deadline = Deadline::AfterMillis(opts_.async_timeout_ms, now);
  t->timeout_ms = opts_.async_timeout_ms;
  // Connecting first (AutoConnect) and refreshing the remote region table
  // may block; HIXL's default 1 s bounds them.
  Deadline setup = Deadline::AfterMillis(1000, now).Earlier(t->deadline);
  s = UseLink("TransferAsync", key, setup, &t->link);
  if (s != SUCCESS) return s;
  std::vector<Piece> direct, relayed;
  s = PrepareBatch(t->link.shared(), op, descs, setup, &t->hold, &direct, &relayed);
  if (s != SUCCESS) return s;
  // The relay is set before the request is armed: its completion cancels it.
  std::shared_ptr<Link> link = t->link.shared();
  t->poll_link = link;
  std::shared_ptr<Relay> relay = MakeRelay(link, op, std::move(relayed), t->done, t->deadline);
  t->relay = relay;
  req = async_.Add(t);
  StartBatch(link, op, direct, relay, t->done, t->deadline, /*caller_waits=*/false);
  AsyncTransfers::Submitted(t);
  return SUCCESS;
}

Status Engine::GetTransferStatus(const TransferReq &req, TransferStatus &status) { return async_.Query(req, &status); }

Status Engine::GetTransferStatus(const GetTransferStatusArgs &args, std::vector<TransferResult> &results) {
  async_.QueryMany(args, &results);
  return SUCCESS;
}

}  // namespace hixl
