// shm_channel.h: the data path to an engine on the same host. The initiator
// copies with process_vm_writev / process_vm_readv straight between its
// buffers and the target's registered memory: one copy, many segments per
// syscall, and the target's CPU does nothing.
//
// A region of the target's that lives in a sealed memfd (shared_file.h) is
// mapped here on first use and copied with memcpy instead.
//
// The kernel checks nothing about registration, so this side does, against
// the target's region table (RemoteRegions), for every syscall's worth of
// segments and under a Hold: a region the target revokes is never written
// after the revocation was acknowledged.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "memory/remote_regions.h"
#include "transport/channel.h"
#include "transport/shm/shared_file.h"
#include "common/io_worker.h"

namespace hixl::shm {

class ShmChannel : public Channel {
 public:
  // True when this process may copy into and out of `pid`'s memory; else
  // `why` says what the kernel answered (EPERM: another user, a hardened
  // ptrace policy; ENOSYS: seccomp; ESRCH: not in our PID namespace).
  static bool Probe(pid_t pid, std::string *why);

  // `regions` and `alive` must outlive the channel; `alive` says whether the
  // link (and so the target process) is still there. Shares of batches run
  // on `workers`: threads of their own, not the I/O workers, whose sockets
  // (heartbeats included) would go unread during a long copy.
  // `pidfd` (from OpenPidfd, or -1) is taken over: it must have been opened
  // before the pid was proven to be the target, so that it is sure to
  // refer to that process and not to one that got its pid later.
  ShmChannel(pid_t pid, int pidfd, const RemoteRegions *regions, std::function<bool()> alive,
             const std::vector<std::unique_ptr<IoWorker>> *workers);
  // A pidfd for `pid` (-1 where the kernel has none), and whether the
  // process it refers to has exited.
  static int OpenPidfd(pid_t pid);
  static bool Exited(int pidfd);
  ~ShmChannel() override;

  const char *name() const override { return "shm"; }
  void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
              Deadline deadline, bool caller_waits) override;
  void Cancel(const Completion *done) override;
  // A caller polling an async request copies the oldest queued share (of at
  // most kStealBytes) itself, so that a poller and a copy worker copy side
  // by side instead of one waiting for the other.
  void Progress() override;
  static constexpr size_t kStealBytes = 1u << 20;
  // Copies stop before their next syscall; no new one starts.
  void Close(const char *why) override;
  // Closed, or the link says the target is gone (the pidfd is asked only
  // before each copy: this runs on every call).
  bool broken() const override;
  bool idle() const override;
  // Unmaps the region if it was mapped: no copy can reach it any more.
  void BeforeRevokeAck(const wire::RegionInfo &region, std::function<void()> ack) override;

  // How many bytes this process copied with memcpy through mappings of
  // peers' regions, over all channels (tests).
  static uint64_t MappedBytesForTest();

 private:
  // Set before the job is listed, constant after (but `claimed` and what
  // mu guards): read without a lock.
  struct Job {
    bool is_write;
    size_t bytes = 0;
    std::atomic<bool> claimed{false};  // a thread has taken it to run
    std::vector<Piece> pieces;
    std::shared_ptr<Completion> done;
    Deadline deadline = Deadline::Never();
    // Held while a syscall touches the job's memory, so that Cancel, which
    // takes it, returns only when none does. Taken before the remote
    // regions' lock (a Hold), never with Core::mu.
    Mutex mu;
    bool cancelled GUARDED_BY(mu) = false;
  };
  // What a queued job needs, shared with it: a job may run after the
  // channel is gone, in which case it finds itself cancelled and stops
  // before touching anything the channel pointed to.
  struct Core {
    // Set by the channel's constructor, before any job: read without a lock.
    pid_t pid;
    int pidfd = -1;
    const RemoteRegions *regions;
    std::function<bool()> alive;
    std::atomic<bool> closed{false};
    // The target's regions that live in a file we could map, by their
    // entry, which the map keeps alive: while listed, no other entry can
    // have its address (a later one at the same range may name another
    // file). A null mapping: tried and failed, copied with process_vm_*.
    // Entries go when their region is revoked (BeforeRevokeAck), or when
    // a new one is added and theirs is no longer in the table.
    struct Mapped {
      std::shared_ptr<const RemoteRegion> region;
      std::shared_ptr<PeerMapping> map;
    };
    // Taken under a Hold (after job.mu), never the other way round.
    Mutex maps_mu;
    std::unordered_map<const RemoteRegion *, Mapped> maps GUARDED_BY(maps_mu);
    // Guards the list of jobs only; held briefly, never during a copy or a
    // callback.
    mutable Mutex mu;
    std::list<std::shared_ptr<Job>> jobs GUARDED_BY(mu);  // running or queued

    ~Core();
    void Run(const std::shared_ptr<Job> &job) EXCLUDES(mu);
    // The job is over with `s`: out of the list, its part of the batch done.
    void Drop(const std::shared_ptr<Job> &job, Status s) EXCLUDES(mu);
    // Copies one batch; SUCCESS or the reason it stopped.
    Status Copy(Job &job) EXCLUDES(job.mu);
    bool TargetAlive() const;
    void Cancel(const Completion *done) EXCLUDES(mu);
    // Where `region` (found under `hold`) is mapped here, or nullptr: it
    // names no file, or mapping it failed. Maps it on first use.
    // (`addr`, `len`: the piece it was found for.)
    std::shared_ptr<PeerMapping> MappingFor(const RemoteRegions::Hold &hold, const RemoteRegion *region,
                                            uint64_t addr, uint64_t len) EXCLUDES(maps_mu);
  };

  std::shared_ptr<Core> core_;
  const std::vector<std::unique_ptr<IoWorker>> *workers_;
  std::atomic<size_t> next_worker_{0};
};

}  // namespace hixl::shm
