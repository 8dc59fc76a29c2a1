// target_stream.h: one TCP stream on the side that accepted it. It serves
// the initiator's requests one at a time, in order, without any call from the
// user: READ from and WRITE into registered memory, after checking every
// segment against the registry and before a byte moves.
//
// Everything a peer sends is hostile until checked: a malformed frame closes
// this stream and nothing else.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memory/registry.h"
#include "transport/tcp/frame_reader.h"
#include "common/io_worker.h"
#include "transport/tcp/iov.h"
#include "control/peer_handler.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl::tcp {

class TargetStream : public Pollable, public ControlPeer, public std::enable_shared_from_this<TargetStream> {
 public:
  TargetStream(int fd, IoWorker *worker, PeerHandler *handler, std::string peer);
  ~TargetStream() override;

  int fd() const override { return fd_; }
  void OnEvents(uint32_t events) override;
  void OnTick(std::chrono::steady_clock::time_point now) override;
  void OnShutdown() override;

  // ControlPeer (worker thread only): REVOKE, answered by REVOKE_ACK; a
  // hang-up (see HangUp) if one is still unanswered.
  void PushRevoke(uint64_t id, const wire::RegionInfo &region) override;
  void HangUpIfRevokePending(uint64_t id) override;
  IoWorker *worker() const override { return worker_; }
  // Any thread: open and no HELLO accepted yet.
  bool awaiting_hello() const { return awaiting_hello_.load(std::memory_order_relaxed); }
  // Worker thread only: closes the stream if it has not completed its
  // handshake (the listener makes room for newer connections).
  void DropIfNoHello(const std::string &why);
  // Out of fds, the listener closes streams that have been quiet (no byte
  // received, none taken by the peer) for this long, whatever state they
  // are in: idle between requests, a handshake or frame half sent, replies
  // the peer does not read. A stream in use is never quiet that long.
  static constexpr std::chrono::seconds kEvictQuiet{1};
  // How long one event reads from a stream before the worker moves on.
  static constexpr std::chrono::milliseconds kReadSlice{5};
  // Any thread: may be evicted if quiet long enough (not a same-host peer
  // that copies into our memory itself: closing its socket would not stop
  // it, see HangUp).
  bool evictable() const { return evictable_.load(std::memory_order_relaxed); }
  // Any thread: when bytes last came in or went out, steady-clock ms.
  int64_t last_active_ms() const { return last_active_ms_.load(std::memory_order_relaxed); }
  // Worker thread only: closes the stream if it is still evictable, quiet
  // for kEvictQuiet and has no unread bytes waiting in its socket.
  void EvictIfQuiet(const std::string &why);

  // A stream that has not completed its handshake by then is dropped.
  static constexpr std::chrono::seconds kHandshakeTimeout{10};
  // A stream that holds a region being deregistered and makes no progress
  // for this long is closed, so that DeregisterMem does not wait forever.
  // Progress: the peer takes bytes of our replies (from us or from the
  // kernel's buffers), or a WRITE's payload ends; other frames do not count.
  static constexpr std::chrono::milliseconds kRevokeStall{500};
  // However it progresses, a stream holds such a region at most this long:
  // a peer taking a byte now and then must not hold DeregisterMem either.
  static constexpr std::chrono::seconds kRevokeLimit{10};
  // A stream quiet for this long frees the buffers its requests needed (a
  // server may keep hundreds of idle streams; a peer could otherwise make
  // each of them sit on some 20 MiB with one burst of small segments).
  static constexpr std::chrono::seconds kIdleTrim{1};

 private:
  struct Reply {
    uint8_t hdr[wire::kHeaderSize] = {};
    std::vector<uint8_t> body;
    std::vector<iovec> out;
    IovCursor cursor;
    PinSet pins;                 // regions a READ reply sends from
    ByteBuffer owned;            // or a copy of them (small segments)
    size_t bytes = 0;            // memory it holds: the copy and the iovecs
    wire::MsgType type = wire::MsgType::kPing;
  };

  void Recv();          // reads and serves requests, sends the replies
  void ResumeRead();    // Recv again after ReadRequests stopped for others' turn
  // A wake-up (OnEvents, ResumeRead, PushRevoke) starts: now_ and its read slice.
  void BeginTurn();
  // True (and a ResumeRead posted) once this turn has read for kReadSlice.
  bool SliceSpent();
  void ReadRequests();  // until EAGAIN, Backlogged, close, or kReadSlice (ResumeRead is posted)
  bool Backlogged() const;  // enough replies queued: read no more requests
  bool OnHeader();                   // false: closed
  bool OnRequest();                  // body complete; false: closed
  bool OnHello();
  // The peer's AUTH (after our AUTH_CHALLENGE): its proof checked, then Admit.
  bool OnAuth();
  // A HELLO (authenticated if we have a key) goes to the engine; HELLO_ACK.
  bool Admit(const wire::Hello &hello);
  // Answers HELLO_ACK with a non-zero status and `reason`, then closes;
  // logged at warn level for an `auth` failure, else as an error.
  bool Refuse(const std::string &reason, bool auth = false);
  // The current request's segments as iovecs into registered memory that
  // this process may read (READ) or write (WRITE), regions pinned; false
  // (logged) if any segment is outside them.
  // `regions` gets, per iovec, its region when that is not host memory
  // (device memory: staged, copied by its kind), else nullptr; left empty
  // when every iovec is host memory.
  bool Resolve(const char *op, std::vector<iovec> *iov, PinSet *pins, std::vector<const Region *> *regions);
  // Between the iovecs (host or device memory, see Resolve) and `staging`,
  // in order: into the user's memory (to_user) or out of it.
  static bool StagedCopy(bool to_user, const std::vector<iovec> &iov, const std::vector<const Region *> &regions,
                         uint8_t *staging, std::string *why);
  void QueueReply(wire::MsgType type, uint32_t status, std::vector<uint8_t> body = {},
                  std::vector<iovec> payload = {}, PinSet pins = PinSet());
  void QueueFrame(wire::MsgType type, uint32_t status, uint64_t req_id, std::vector<uint8_t> body,
                  std::vector<iovec> payload, PinSet pins, ByteBuffer owned = {});
  void Send();
  void Settle();  // after sending: resume held requests, set epoll interest
  void UpdateInterest();  // also publishes evictable()
  void NoteActive();      // publishes last_active_ms()
  void CloseStream(const std::string &why, bool error);
  // Our decision to end the stream. A peer that copies into our memory
  // itself (shm) is not stopped by our closing the socket, so with one we
  // only shut our sending side and read (and drop) what comes until the
  // peer closes its end, which it does after its copies in flight: only
  // then do its pending revocations count as confirmed (see Revocation).
  void HangUp(const std::string &why, bool error);
  void Drain();  // while draining_: reads and drops until the peer's end closes
  void TrimIfIdle(std::chrono::steady_clock::time_point now);  // see kIdleTrim

  int fd_;
  IoWorker *worker_;
  PeerHandler *handler_;
  const std::string peer_;
  std::string who_;  // peer_ plus the engine name once known, for logs
  uint64_t link_key_ = 0;
  uint32_t heartbeat_ms_ = 0;  // from the HELLO; 0: the initiator never pings
  bool hello_done_ = false;
  // Sent AUTH_CHALLENGE, awaiting AUTH: the HELLO, and the proof it needs.
  bool auth_pending_ = false;
  wire::Hello pending_hello_;
  wire::AuthBytes expect_mac_i_{};
  std::atomic<bool> awaiting_hello_{true};  // !hello_done_ && open, for the listener
  std::atomic<bool> evictable_{true};       // see evictable(); set by UpdateInterest
  std::atomic<int64_t> last_active_ms_{0};  // see last_active_ms()
  bool control_ = false;                 // stream 0 of its link, known to the engine
  bool direct_ = false;                  // its peer reaches our memory without our checks (shm)
  bool draining_ = false;                // hung up on: waiting for the peer's end to close
  std::vector<uint64_t> revokes_;        // REVOKEs sent and not yet acknowledged
  bool close_after_flush_ = false;
  uint32_t interest_ = 0;
  std::chrono::steady_clock::time_point created_;
  std::chrono::steady_clock::time_point last_progress_;  // see kRevokeStall
  std::optional<std::chrono::steady_clock::time_point> revoked_since_;  // first tick holding a revoked region
  int kernel_queued_ = -1;  // SIOCOUTQ at the last tick that held a revoked region
  std::chrono::steady_clock::time_point last_rx_;
  std::chrono::steady_clock::time_point last_tx_;  // when sending last made progress
  // When the worker woke for this stream: one clock read per wake-up, not
  // per frame, is fine enough for the stall check.
  std::chrono::steady_clock::time_point now_;

  FrameReader reader_;
  wire::FrameHeader cur_;  // of the request being read
  std::vector<wire::Segment> segs_;
  std::vector<iovec> payload_iov_;
  PinSet payload_pins_;           // regions the current WRITE lands in
  std::vector<const Region *> payload_regions_;  // its device regions per iovec (see Resolve)
  ByteBuffer stage_;              // small segments: the WRITE payload lands here first
  std::vector<iovec> stage_iov_;
  bool write_staged_ = false;
  bool resume_posted_ = false;  // a ResumeRead is posted to the worker
  // When this OnEvents/ResumeRead began: one kReadSlice for all its reading.
  std::chrono::steady_clock::time_point slice_start_;

  std::deque<std::unique_ptr<Reply>> tx_;
  size_t tx_bytes_ = 0;  // the `bytes` of tx_
  bool held_ = false;    // Recv stopped for Backlogged (input may be buffered)
  BufferCache buffers_;  // for small-segment READ replies
};

}  // namespace hixl::tcp
