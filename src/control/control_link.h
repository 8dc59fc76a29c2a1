// control_link.h: the initiator's side of a link's control connection, one
// TCP stream to the target (HELLO stream index 0) whatever transport carries
// the data: the handshake (where the transports make their offers), the
// target's region table (fetched in pages, applied in stream order), its
// REVOKEs (forgotten, then acknowledged), notifies, and the choice of
// transport (USING). As NIXL and Mooncake keep metadata on a side channel,
// this keeps it off the data path.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/address.h"
#include "common/completion.h"
#include "common/deadline.h"
#include "common/io_worker.h"
#include "hixl/hixl_types.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"
#include "wire/messages.h"

namespace hixl {
namespace tcp {
class TcpLink;
}

class ControlLink {
 public:
  struct Params {
    std::string local_name;  // our engine's address
    EngineAddress remote;
    uint32_t heartbeat_ms = 0;
    wire::HostIdentity host;
    wire::Sections offers;  // the transports' parts of HELLO
    // The target's table: filled from the handshake before any frame from
    // the target is read, refreshed by FetchRegions, shrunk by its REVOKEs.
    // While it closes, the control stream waits for holds on it (direct
    // copies in flight), so that its end tells the target no copy runs.
    std::shared_ptr<RemoteRegions> regions;
    const std::atomic<bool> *cancel = nullptr;  // dialing gives up soon after it turns true
    // Called for each REVOKE once the table dropped the region, on the
    // stream's I/O thread; REVOKE_ACK goes when it calls `ack` (at once
    // or later, from any thread; at most once). None: acknowledged at once.
    // The engine asks the link's channel (Channel::BeforeRevokeAck).
    std::function<void(const wire::RegionInfo &region, std::function<void()> ack)> before_revoke_ack;
  };

  // Dials, shakes hands and has the whole region table before `deadline`.
  // SUCCESS, TIMEOUT or FAILED, with the reason in *why; `ack` is the
  // target's answer (its transports' answers in ack->answers).
  static Status Open(const Params &params, const std::vector<std::unique_ptr<IoWorker>> &workers, Deadline deadline,
                     std::unique_ptr<ControlLink> *out, wire::HelloAck *ack, std::string *why);
  ~ControlLink();

  uint64_t link_nonce() const;
  // The control stream's socket (-1 once closed): a transport may prove by
  // it which process the target is.
  int fd() const;

  // Fetches the target's whole table again and applies it by its place on
  // the stream. SUCCESS, TIMEOUT, or FAILED (logged).
  Status FetchRegions(Deadline deadline);
  // Queues a NOTIFY; its answer completes one part of `done`.
  void Notify(const wire::Notify &notify, const std::shared_ptr<Completion> &done);
  // Tells the target which transport carries the link's data (no answer).
  void SayUsing(uint16_t transport);
  // After it returns, nothing of `done` is pending on the control stream.
  void Cancel(const Completion *done);

  void Close(const char *why);
  bool broken() const;
  bool idle() const;
  bool CheckAlive(int64_t interval_ms);
  void Progress();
  // The control stream as a data path (the target serves WRITE and READ on
  // it as on any stream): for transports that move bytes through it.
  Channel &channel();

  // Most tries at fetching a table that changes between its pages.
  static constexpr int kMaxFetchTries = 8;

 private:
  ControlLink() = default;
  // One page from `first`; its place on the stream in *rx_order.
  Status FetchPage(uint32_t first, Deadline deadline, wire::RegionPage *page, uint64_t *rx_order);
  // The rest of a table whose first page came with generation `generation`:
  // appended to *entries. FAILED with reason "changed" when a page is of
  // another generation.
  Status FetchRest(const wire::RegionPage &head, Deadline deadline, std::vector<wire::RegionEntry> *entries,
                   std::string *why);

  std::string remote_name_;
  std::shared_ptr<RemoteRegions> regions_;
  std::unique_ptr<tcp::TcpLink> tcp_;
};

}  // namespace hixl
