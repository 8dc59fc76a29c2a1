// engine.h: one HIXL engine: options, registered memory, links to remote
// engines, async requests, the notify inbox, and the threads that serve
// peers. class Hixl (src/api) checks nothing but the engine's existence and
// forwards here.
//
// The engine's code is split by concern: engine.cc (life cycle, memory,
// notifies), engine_connect.cc (links: connect and the choice of transport,
// disconnect, the async connect pool, auto-connect, heartbeats),
// engine_transfer.cc (batches: checks, TransferSync, TransferAsync and their
// status), serving.cc (the target's side: handshakes, notifies and
// revocations of peers). The engine knows transports only through
// transport/transport.h; transports.cc lists them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "auth/authenticator.h"
#include "common/address.h"
#include "common/deadline.h"
#include "common/mutex.h"
#include "engine/async_transfers.h"
#include "engine/buffer_pool.h"
#include "engine/relay.h"
#include "engine/connect_pool.h"
#include "engine/link.h"
#include "engine/link_table.h"
#include "engine/batch_check.h"
#include "engine/notify_inbox.h"
#include "engine/options.h"
#include "common/io_worker.h"
#include "engine/revocation.h"
#include "engine/serving.h"
#include "hixl/hixl_types.h"
#include "memory/registry.h"
#include "transport/transport.h"

namespace hixl {

class Engine {
 public:
  // Parses the address and options, starts threads and (for a server) the
  // listener. SUCCESS, PARAM_INVALID, UNSUPPORTED or FAILED (logged).
  static Status Create(const std::string &local_engine, const std::map<std::string, std::string> &options,
                       std::shared_ptr<Engine> *out);
  ~Engine();
  // Fails in-flight transfers, closes every link, joins every thread.
  void Shutdown();

  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &handle);
  Status DeregisterMem(MemHandle handle) EXCLUDES(dereg_mu_);

  Status Connect(const std::string &remote, int32_t timeout_ms);
  Status Disconnect(const std::string &remote, int32_t timeout_ms);
  Status ConnectAsync(const std::string &remote, int32_t timeout_ms) EXCLUDES(connect_mu_);
  Status DisconnectAsync(const std::string &remote, int32_t timeout_ms) EXCLUDES(connect_mu_);
  Status GetAsyncConnectStatus(const std::string &remote, AsyncConnectStatus &status) EXCLUDES(connect_mu_);
  Status GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &statuses) EXCLUDES(connect_mu_);

  Status TransferSync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                      int32_t timeout_ms);
  Status TransferAsync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                       const TransferArgs &args, TransferReq &req);
  Status GetTransferStatus(const TransferReq &req, TransferStatus &status);
  Status GetTransferStatus(const GetTransferStatusArgs &args, std::vector<TransferResult> &results);

  Status SendNotify(const std::string &remote, const NotifyDesc &notify, int32_t timeout_ms);
  Status GetNotifies(std::vector<NotifyDesc> &notifies);
  // The remote's region table, fetched again.
  Status GetRemoteMems(const std::string &remote, std::vector<MemDesc> &mems, int32_t timeout_ms);

  const std::string &name() const { return name_; }
  size_t registered_regions() const { return registry_.size(); }
  // The transport carrying the data of the link to `remote`: NOT_CONNECTED
  // without a working link (tests assert the choice with it).
  Status LinkTransport(const std::string &remote, std::string *transport);

  // How long DeregisterMem waits for same-host peers to forget a region.
  static constexpr std::chrono::seconds kRevokeLimit{10};
  // And for peers over tcp (see Revocation): answers take a round trip;
  // a frozen or hostile peer takes this long, once until it answers (so
  // does one whose READ replies fill our queue: see docs/architecture.md).
  static constexpr std::chrono::milliseconds kNoticeLimit{250};

 private:
  // The state of the latest ConnectAsync/DisconnectAsync task of a remote.
  struct AsyncConnectEntry {
    uint64_t seq = 0;
    AsyncConnectStatus status = AsyncConnectStatus::NOT_CONNECT;
    std::string given;  // the remote as that task's caller spelled it (the map overload's key)
  };

  Engine(EngineOptions opts, std::shared_ptr<const auth::Authenticator> auth);
  // The key of auth.key_file (`option`) or HIXL_AUTH_KEY_FILE, or none
  // (warned about once per process). PARAM_INVALID (a bad key file) or
  // FAILED (no libcrypto), logged.
  static Status LoadAuthKey(const std::string &option, std::shared_ptr<const auth::Authenticator> *out);
  Status Start(const EngineAddress &local);

  // engine_connect.cc
  // Canonical name of a remote server address, or PARAM_INVALID (logged).
  Status RemoteKey(const char *call, const std::string &remote, std::string *key, EngineAddress *addr = nullptr);
  // SUCCESS for a positive timeout; PARAM_INVALID (logged) otherwise.
  static Status CheckTimeout(const char *call, const std::string &key, int32_t timeout_ms);
  // Opens a link to `key` and adds it to the table. ALREADY_CONNECTED when a
  // working link exists. With `out`, the link (new or existing) is handed
  // back in use, so that nothing can close it as idle in between.
  Status OpenLink(const std::string &key, const EngineAddress &addr, Deadline deadline, LinkRef *out = nullptr)
      EXCLUDES(connect_mu_);
  // The link a call to `key` should use, connecting first when AutoConnect
  // is on or the channel pool closed the link. NOT_CONNECTED, FAILED (broken
  // link, no AutoConnect) or a connect failure otherwise; all logged.
  Status UseLink(const char *call, const std::string &key, Deadline deadline, LinkRef *out);
  // After the handshake: the first of transports_ that reaches the remote
  // makes the link's channel. SUCCESS, or TIMEOUT / FAILED (logged, with
  // why each transport was not used).
  Status ChooseTransport(Link &link, const EngineAddress &addr, const wire::HelloAck &ack, Deadline deadline);
  void CloseLinks(std::vector<std::shared_ptr<Link>> &links, const char *why);
  void SetAsyncStatus(const std::string &key, uint64_t seq, AsyncConnectStatus status) EXCLUDES(connect_mu_);
  // st, or NOT_CONNECT where st is CONNECTED but the link to key has gone since.
  AsyncConnectStatus StillConnected(const std::string &key, AsyncConnectStatus st);
  // Keeps async_connect_ at most kMaxAsyncConnects long.
  void ForgetOldAsyncConnectsLocked() REQUIRES(connect_mu_);
  static constexpr size_t kMaxAsyncConnects = 4096;
  Status QueueConnectTask(const char *call, const std::string &remote, int32_t timeout_ms, bool connect)
      EXCLUDES(connect_mu_);
  void Housekeeping() EXCLUDES(house_mu_);

  // engine.cc
  // The transports protocol_desc allows, in the order a link tries them,
  // and their parts of our HELLO.
  Status StartTransports();
  // Transports' registration hook for a new region (undone if one fails).
  Status PrepareRegion(Region &region);

  // engine_transfer.cc
  // Checks every descriptor and pins the local regions used; PARAM_INVALID
  // (logged) names the first bad descriptor. Pieces with registered local
  // memory go to `direct`, the others (buffer pool on) to `relayed`.
  Status PrepareBatch(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<TransferOpDesc> &descs,
                      Deadline deadline, BatchHold *hold, std::vector<Piece> *direct, std::vector<Piece> *relayed);
  // The relay for the pieces that go through the buffer pool (nullptr when
  // there are none); it adds its part to `done` but does not run yet.
  std::shared_ptr<Relay> MakeRelay(const std::shared_ptr<Link> &link, TransferOp op, std::vector<Piece> relayed,
                                   const std::shared_ptr<Completion> &done, Deadline deadline);
  // Starts a checked batch: the relay, and the direct pieces on the link's
  // channel. Every part of it belongs to `done`.
  // `link` and `relay` are held by the caller for the call: an async
  // request may finish (and let go of its own references) while it runs.
  void StartBatch(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<Piece> &direct,
                  const std::shared_ptr<Relay> &relay,
                  const std::shared_ptr<Completion> &done, Deadline deadline, bool caller_waits);
  Status RefreshRemoteRegions(const std::shared_ptr<Link> &link, Deadline deadline);
  // Waits for `done`; on failure or timeout cancels what is left of it on
  // `channel` (the link's data path, or its TCP link for control messages).
  Status Finish(Channel &channel, const std::shared_ptr<Completion> &done, Deadline deadline, Relay *relay = nullptr);
  // Checks shared by TransferSync and TransferAsync.
  Status CheckTransferArgs(const char *call, const std::string &remote, TransferOp op, std::string *key);

  const EngineOptions opts_;
  // Our key, or nullptr; constant (peers' streams and our links use it).
  const std::shared_ptr<const auth::Authenticator> auth_;
  EngineAddress local_;
  std::string name_;
  wire::HostIdentity host_;
  Registry registry_;
  NotifyInbox inbox_;
  BufferPool pool_;
  // The pool's buffers are page-locked by the CUDA driver (staging copies
  // of device memory run at full speed), from the first MEM_DEVICE
  // registration until Shutdown.
  std::atomic<bool> pool_pinned_{false};  // tried
  std::atomic<bool> pinned_pool_{false};  // and done
  void PinPoolForDevice();
  LinkTable links_;
  Revocation revocation_;
  // Guards the two sets of handles below; dereg_cv_ wakes a DeregisterMem
  // waiting for another of the same handle. Not held while peers and pins
  // are waited for; taken before the registry's lock (Revoke).
  Mutex dereg_mu_;
  CondVar dereg_cv_;
  // Handles whose DeregisterMem is under way (waiting for peers and pins).
  std::set<uintptr_t> deregistering_ GUARDED_BY(dereg_mu_);
  // Handles whose DeregisterMem returned FAILED because a peer on this host
  // did not confirm it stopped copying into the region: the next
  // DeregisterMem of the handle waits for that revocation again.
  struct Unconfirmed {
    std::shared_ptr<Region> region;  // keeps the handle's value from being reused
    uint64_t revocation = 0;
  };
  std::map<uintptr_t, Unconfirmed> unconfirmed_ GUARDED_BY(dereg_mu_);
  AsyncTransfers async_;
  ConnectPool connect_pool_;
  std::vector<std::unique_ptr<IoWorker>> workers_;
  std::atomic<bool> stopping_{false};
  // protocol_desc's transports (or all, by rank), in the order links try
  // them; constant once started. Links point at them: stopped only after
  // every link is closed.
  std::vector<std::unique_ptr<Transport>> transports_;
  wire::Sections offers_;  // their parts of HELLO
  // Serves peers (listener streams call it): declared after what it refers
  // to, so that it is made after and destroyed before them.
  Serving serving_;

  // Guards the connects under way and the async connect statuses;
  // connect_cv_ wakes a Connect waiting for another to the same remote (and
  // all of them at Shutdown). Held briefly, never while dialing. Taken
  // before the link table's lock (OpenLink looks a link up under it) and
  // the connect pool's (QueueConnectTask submits under it).
  Mutex connect_mu_;
  CondVar connect_cv_;
  std::set<std::string> connecting_ GUARDED_BY(connect_mu_);
  std::map<std::string, AsyncConnectEntry> async_connect_ GUARDED_BY(connect_mu_);
  uint64_t async_seq_ GUARDED_BY(connect_mu_) = 0;

  // Heartbeats and async deadlines.
  std::thread housekeeper_;
  // Guards no data (stopping_ is an atomic): the housekeeper sleeps on
  // house_cv_ under it, and Shutdown wakes it.
  Mutex house_mu_;
  CondVar house_cv_;
};

}  // namespace hixl
