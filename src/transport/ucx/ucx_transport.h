// ucx_transport.h: the ucx transport: RDMA (InfiniBand, RoCE) through UCX,
// and UCX's tcp and shared-memory transports where UCX has no RDMA device.
// Every UCX call goes through the plug-in (libhixl_ucx.so, loaded at run
// time: ucx_loader.h), so libhixl itself never links UCX.
//
// - Made only when protocol_desc names it (ucx, rdma or roce), or when the
//   host has an RDMA device that UCX sees: elsewhere UCX runs emulated RMA
//   over tcp or shared memory, where hixl's own transports are faster. A
//   plain host thus makes no UCX context and does not even load UCX.
// - One plug-in context per engine: one worker and its progress thread
//   (the engine's one extra thread, whatever the number of peers).
// - Handshake: the initiator offers a version byte; a target that runs ucx
//   answers with its worker's address, as a `direct` peer: UCX's emulated
//   put and get do not check the target's registrations, and over RDMA the
//   NIC reaches its memory without the target's CPU, so DeregisterMem waits
//   for the peer's REVOKE_ACK (which the channel holds back while a batch of
//   its may touch the region).
// - Registration: each region is mapped (mem_register) with the access this
//   process has to all of it then (/proc/self/maps): read-write, or read
//   only (its key carries no remote write access, and initiators refuse a
//   WRITE into it before posting anything); one it may not read is not
//   mapped. The access and the packed remote key go into the region
//   table's section 3.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_plugin_api.h"

namespace hixl::ucx {

constexpr uint16_t kWireId = 3;
// The first byte of the offer and of the answer. 2: region entries carry
// their access before the key (a target of version 1 is not used).
constexpr uint8_t kHandshakeVersion = 2;
// What a peer may send us: a worker address (a few hundred bytes with many
// devices) and a packed remote key (tens of bytes per memory domain). UCX
// parses both without length checks, so longer ones are refused first.
constexpr size_t kMaxWorkerAddress = 16u << 10;
constexpr size_t kMaxPackedRkey = 4096;

// The worker address in a target's answer (empty, with *why, when there is
// none or it is malformed).
bool DecodeAnswer(const wire::Sections &sections, std::vector<uint8_t> *address, std::string *why);

// A region entry's section 3: `u8` access (HIXL_UCX_REMOTE_* bits, READ at
// least), then the packed remote key (1 to kMaxPackedRkey bytes).
struct EntryKey {
  unsigned access = 0;
  const uint8_t *packed = nullptr;
  size_t len = 0;
};
void EncodeEntryKey(unsigned access, const void *packed, size_t len, std::vector<uint8_t> *out);
// False, with *why, when the entry has no section 3 or a malformed one.
bool DecodeEntryKey(const wire::Sections &sections, EntryKey *out, std::string *why);

class UcxTransport final : public Transport {
 public:
  static Status Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why);
  ~UcxTransport() override;

  const char *name() const override { return "ucx"; }
  uint16_t wire_id() const override { return kWireId; }
  void Offer(std::vector<uint8_t> *bytes) override;
  void Answer(const PeerView &peer, TransportAnswer *answer) override;
  bool CanReach(const PeerView &peer, MemKinds kinds, std::string *why) override;
  Status Connect(const PeerView &peer, const LinkSetup &link, Deadline deadline, std::unique_ptr<Channel> *out,
                 std::string *why) override;
  Status OnRegister(Region &region) override;
  void OnDeregister(const Region &region) override;
  // Destroys the context (after every link closed): its thread stops.
  void Stop() override;

 private:
  UcxTransport(const hixl_ucx_api_t *api, const TransportEnv &env) : api_(api), io_workers_(env.io_workers) {}
  // Runs `fn` on one of the engine's I/O threads (a REVOKE_ACK held back by
  // a batch: the plug-in's thread, where the batch completes, must not
  // block on a stream's locks).
  void PostToIo(std::function<void()> fn);

  const hixl_ucx_api_t *const api_;
  const std::vector<std::unique_ptr<IoWorker>> *const io_workers_;
  // Set by Create, constant after: read without a lock (Answer runs on I/O
  // threads until they stop, after Stop).
  std::vector<uint8_t> address_;
  hixl_ucx_context_t *ctx_ = nullptr;  // null once stopped, see mu_
  // Guards stopped_: registrations racing Stop (Finalize deregisters every
  // region after it) must not reach a destroyed context. Held across
  // mem_register/mem_deregister (they wait for the plug-in's thread, whose
  // callbacks never take it).
  Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace hixl::ucx
