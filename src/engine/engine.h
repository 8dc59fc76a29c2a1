// engine.h: one HIXL engine: options, registered memory, links to remote
// engines, async requests, the notify inbox, and the threads that serve
// peers. class Hixl (src/api) checks nothing but the engine's existence and
// forwards here.
//
// The engine's code is split by concern: engine.cc (life cycle, memory,
// notifies, serving peers), engine_connect.cc (links: connect, disconnect,
// the async connect pool, auto-connect, heartbeats), engine_transfer.cc
// (batches: checks, TransferSync, TransferAsync and their status).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/address.h"
#include "common/deadline.h"
#include "engine/async_transfers.h"
#include "engine/buffer_pool.h"
#include "engine/relay.h"
#include "engine/connect_pool.h"
#include "engine/link.h"
#include "engine/link_table.h"
#include "engine/notify_inbox.h"
#include "engine/options.h"
#include "engine/revocation.h"
#include "hixl/hixl_types.h"
#include "memory/registry.h"
#include "transport/tcp/io_worker.h"
#include "transport/tcp/target_context.h"

namespace hixl {

class Engine : public tcp::TargetContext {
 public:
  // Parses the address and options, starts threads and (for a server) the
  // listener. SUCCESS, PARAM_INVALID, UNSUPPORTED or FAILED (logged).
  static Status Create(const std::string &local_engine, const std::map<std::string, std::string> &options,
                       std::shared_ptr<Engine> *out);
  ~Engine() override;
  // Fails in-flight transfers, closes every link, joins every thread.
  void Shutdown();

  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &handle);
  Status DeregisterMem(MemHandle handle);

  Status Connect(const std::string &remote, int32_t timeout_ms);
  Status Disconnect(const std::string &remote, int32_t timeout_ms);
  Status ConnectAsync(const std::string &remote, int32_t timeout_ms);
  Status DisconnectAsync(const std::string &remote, int32_t timeout_ms);
  Status GetAsyncConnectStatus(const std::string &remote, AsyncConnectStatus &status);
  Status GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &statuses);

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

  // tcp::TargetContext
  std::shared_ptr<const RegionTable> Regions() override { return registry_.Snapshot(); }
  std::vector<wire::RegionInfo> ExportRegions() override { return registry_.Export(); }
  Status OnHello(const wire::Hello &hello, wire::HelloAck *ack) override;
  Status OnNotify(uint64_t link_key, const std::string &peer, wire::Notify &&notify) override;
  bool OnControlStream(const std::shared_ptr<tcp::TargetStream> &stream, const wire::Hello &hello) override;
  void OnControlStreamClosed(tcp::TargetStream *stream) override;
  void OnNoDirect(tcp::TargetStream *stream) override { revocation_.SetIndirect(stream); }
  void OnRevokeAck(uint64_t id, tcp::TargetStream *stream) override { revocation_.OnAck(id, stream); }

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

  explicit Engine(EngineOptions opts);
  Status Start(const EngineAddress &local);

  // engine_connect.cc
  // Canonical name of a remote server address, or PARAM_INVALID (logged).
  Status RemoteKey(const char *call, const std::string &remote, std::string *key, EngineAddress *addr = nullptr);
  // SUCCESS for a positive timeout; PARAM_INVALID (logged) otherwise.
  static Status CheckTimeout(const char *call, const std::string &key, int32_t timeout_ms);
  // Opens a link to `key` and adds it to the table. ALREADY_CONNECTED when a
  // working link exists. With `out`, the link (new or existing) is handed
  // back in use, so that nothing can close it as idle in between.
  Status OpenLink(const std::string &key, const EngineAddress &addr, Deadline deadline, LinkRef *out = nullptr);
  // The link a call to `key` should use, connecting first when AutoConnect
  // is on or the channel pool closed the link. NOT_CONNECTED, FAILED (broken
  // link, no AutoConnect) or a connect failure otherwise; all logged.
  Status UseLink(const char *call, const std::string &key, Deadline deadline, LinkRef *out);
  // After the handshake: picks the link's data path (shm or tcp) within
  // protocol_desc; returns the number of TCP streams the link needs, 0 when
  // no allowed transport reaches the remote.
  uint32_t ChooseTransport(Link &link, const wire::HelloAck &ack, int fd);
  // Same boot and PID namespace (the pid may be 0: withheld) / and a pid.
  bool SameKernel(const wire::HostIdentity &other) const;
  bool SameHost(const wire::HostIdentity &other) const;
  // A same-host peer proven to be the process it claims (see OnControlStream).
  bool MayCopyDirectly(const tcp::TargetStream &stream, const wire::Hello &hello) const;
  void CloseLinks(std::vector<std::shared_ptr<Link>> &links, const char *why);
  void SetAsyncStatus(const std::string &key, uint64_t seq, AsyncConnectStatus status);
  // st, or NOT_CONNECT where st is CONNECTED but the link to key has gone since.
  AsyncConnectStatus StillConnected(const std::string &key, AsyncConnectStatus st);
  // Keeps async_connect_ at most kMaxAsyncConnects long. With connect_mu_.
  void ForgetOldAsyncConnectsLocked();
  static constexpr size_t kMaxAsyncConnects = 4096;
  Status QueueConnectTask(const char *call, const std::string &remote, int32_t timeout_ms, bool connect);
  void Housekeeping();

  // engine_transfer.cc
  // Checks every descriptor and pins the local regions used; PARAM_INVALID
  // (logged) names the first bad descriptor. Pieces with registered local
  // memory go to `direct`, the others (buffer pool on) to `relayed`.
  Status PrepareBatch(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<TransferOpDesc> &descs,
                      Deadline deadline, PinSet *pins, std::vector<Piece> *direct, std::vector<Piece> *relayed);
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
  EngineAddress local_;
  std::string name_;
  wire::HostIdentity host_;
  Registry registry_;
  NotifyInbox inbox_;
  BufferPool pool_;
  LinkTable links_;
  Revocation revocation_;
  // Handles whose DeregisterMem is under way (waiting for peers and pins).
  std::mutex dereg_mu_;
  std::condition_variable dereg_cv_;
  std::set<uintptr_t> deregistering_;
  // Handles whose DeregisterMem returned FAILED because a peer on this host
  // did not confirm it stopped copying into the region: the next
  // DeregisterMem of the handle waits for that revocation again.
  struct Unconfirmed {
    std::shared_ptr<Region> region;  // keeps the handle's value from being reused
    uint64_t revocation = 0;
  };
  std::map<uintptr_t, Unconfirmed> unconfirmed_;  // under dereg_mu_
  AsyncTransfers async_;
  ConnectPool connect_pool_;
  std::vector<std::unique_ptr<tcp::IoWorker>> workers_;
  // shm copies (when protocol_desc allows shm): as many threads as I/O
  // workers, apart from them, so that copying a large batch never keeps the
  // sockets of every link from being read (a peer would look dead).
  std::vector<std::unique_ptr<tcp::IoWorker>> copy_workers_;
  std::atomic<bool> stopping_{false};

  std::mutex connect_mu_;  // guards connecting_ and async_connect_
  std::condition_variable connect_cv_;
  std::set<std::string> connecting_;
  std::map<std::string, AsyncConnectEntry> async_connect_;
  uint64_t async_seq_ = 0;

  // Heartbeats and async deadlines.
  std::thread housekeeper_;
  std::mutex house_mu_;
  std::condition_variable house_cv_;
};

}  // namespace hixl
