// engine.h: one HIXL engine: options, registered memory, links to remote
// engines, the notify inbox, and the threads that serve peers. class Hixl
// (src/api) checks nothing but the engine's existence and forwards here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/address.h"
#include "common/deadline.h"
#include "engine/notify_inbox.h"
#include "engine/options.h"
#include "engine/remote_regions.h"
#include "hixl/hixl_types.h"
#include "memory/registry.h"
#include "transport/tcp/io_worker.h"
#include "transport/tcp/listener.h"
#include "transport/tcp/tcp_link.h"
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
  Status TransferSync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                      int32_t timeout_ms);
  Status SendNotify(const std::string &remote, const NotifyDesc &notify, int32_t timeout_ms);
  Status GetNotifies(std::vector<NotifyDesc> &notifies);

  const EngineOptions &options() const { return opts_; }
  const std::string &name() const { return name_; }

  // tcp::TargetContext
  std::shared_ptr<const RegionTable> Regions() override { return registry_.Snapshot(); }
  std::vector<wire::RegionInfo> ExportRegions() override { return registry_.Export(); }
  Status OnHello(const wire::Hello &hello, wire::HelloAck *ack) override;
  Status OnNotify(uint64_t link_key, wire::Notify &&notify) override;

 private:
  struct Link {
    std::string name;
    std::unique_ptr<tcp::TcpLink> tcp;
    RemoteRegions remote_regions;
  };

  explicit Engine(EngineOptions opts) : opts_(std::move(opts)), registry_(opts_.max_regions) {}
  Status Start(const EngineAddress &local);
  // Canonical name of a remote server address, or PARAM_INVALID (logged).
  Status RemoteKey(const char *call, const std::string &remote, std::string *key, EngineAddress *addr = nullptr);
  std::shared_ptr<Link> FindLink(const std::string &key);
  // Checks every descriptor and pins the local regions used; PARAM_INVALID
  // (logged) names the first bad descriptor.
  Status PrepareBatch(Link &link, TransferOp op, const std::vector<TransferOpDesc> &descs, Deadline deadline,
                      PinSet *pins, std::vector<tcp::Piece> *pieces);
  Status RefreshRemoteRegions(Link &link, Deadline deadline);
  // Waits for `done`; on failure or timeout cancels what is left of it.
  Status Finish(Link &link, const std::shared_ptr<Completion> &done, Deadline deadline);

  const EngineOptions opts_;
  EngineAddress local_;
  std::string name_;
  wire::HostIdentity host_;
  Registry registry_;
  NotifyInbox inbox_;
  std::vector<std::unique_ptr<tcp::IoWorker>> workers_;
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::condition_variable connect_cv_;
  std::map<std::string, std::shared_ptr<Link>> links_;
  std::set<std::string> connecting_;
};

}  // namespace hixl
