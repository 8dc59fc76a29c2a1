// engine_transfer.cc: batches: descriptor checks, TransferSync,
// TransferAsync and the status of async requests.
#include <cinttypes>

#include "common/log.h"
#include "engine/batch_check.h"
#include "engine/engine.h"
#include "memory/page_access.h"
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
  std::vector<MemRange> ranges;
  ranges.reserve(relayed.size());
  for (const Piece &p : relayed) ranges.push_back({p.local, p.len});
  const size_t bad = FirstInaccessible(ranges.data(), ranges.size(), need);
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
  auto done = std::make_shared<Completion>();
  auto result = std::make_shared<std::string>("no reply");
  auto req = tcp::MakeRequest(wire::MsgType::kRegionsReq, {}, done);
  // Applied with its place on the control stream: a REVOKE that the target
  // sent after this reply but that another thread applied first is not
  // undone by it (RemoteRegions::Replace). The reply may be applied after
  // this call gave up waiting, by when the link may be gone: hence the weak
  // reference.
  std::weak_ptr<Link> weak = link;
  req->on_reply = [result, weak](std::vector<uint8_t> &&body, uint64_t rx_order) {
    auto l = weak.lock();
    if (l == nullptr) return;
    std::vector<wire::RegionInfo> table;
    if (!wire::DecodeRegions(body.data(), body.size(), &table)) {
      HIXL_LOGE("%s: malformed region table from the peer", l->name.c_str());
      *result = "malformed";
      return;
    }
    l->remote_regions.Replace(std::move(table), rx_order);
    *result = "ok";
  };
  link->tcp->SubmitControl(std::move(req));
  Status s = Finish(*link->tcp, done, deadline);
  if (s != SUCCESS) return s;
  return *result == "ok" ? SUCCESS : FAILED;
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
    HIXL_LOGE("GetRemoteMems %s: the remote's region table did not come (status %u)", key.c_str(), s);
    return s;
  }
  mems.clear();
  for (const wire::RegionInfo &r : link->remote_regions.Snapshot()) {
    MemDesc m{};
    m.addr = static_cast<uintptr_t>(r.addr);
    m.len = static_cast<size_t>(r.len);
    mems.push_back(m);
  }
  return SUCCESS;
}

Status Engine::PrepareBatch(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<TransferOpDesc> &descs,
                            Deadline deadline, PinSet *pins, std::vector<Piece> *direct, std::vector<Piece> *relayed) {
  auto table = registry_.Snapshot();
  const unsigned local_need = op == READ ? kPageWrite : kPageRead;
  BatchCheck check(*table, link->remote_regions, pool_.enabled(), local_need);
  bool refreshed = false;
  for (size_t from = 0;;) {
    BatchCheck::Result r = check.Run(descs, from, pins, direct, relayed);
    if (r.verdict == BatchCheck::Verdict::kOk) return CheckRelayedAccess(*link, op, *relayed, local_need);
    const TransferOpDesc &d = descs[r.index];
    if (r.verdict == BatchCheck::Verdict::kRemoteUnknown && !refreshed) {
      // Maybe registered at the remote after our copy was taken: ask again,
      // once per batch, and go on from this descriptor.
      refreshed = true;
      Status s = RefreshRemoteRegions(link, deadline);
      if (s != SUCCESS) return s;
      check.ForgetRemote();
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
  PinSet pins;
  std::vector<Piece> direct, relayed;
  s = PrepareBatch(link.shared(), op, descs, deadline, &pins, &direct, &relayed);
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
    HIXL_LOGE("TransferSync %s %s: failed with status %u", OpName(op), key.c_str(), s);
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
  // Connecting first (AutoConnect) and refreshing the remote region table
  // may block; HIXL's default 1 s bounds them.
  Deadline setup = Deadline::AfterMillis(1000, now).Earlier(t->deadline);
  s = UseLink("TransferAsync", key, setup, &t->link);
  if (s != SUCCESS) return s;
  std::vector<Piece> direct, relayed;
  s = PrepareBatch(t->link.shared(), op, descs, setup, &t->pins, &direct, &relayed);
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
