// baselines.h: what every hixl figure is divided by, measured in the same
// run: the same bytes over plain TCP sockets (for the tcp transport), or
// copied by one thread with memcpy (for shm, a same-host transport).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "workload.h"

namespace hixl_bench {

class Baseline {
 public:
  virtual ~Baseline() = default;
  // "tcp" or "memcpy", as written in the report.
  virtual const char *name() const = 0;
  // Gets ready for `w` (connections, descriptors). False with `why`.
  virtual bool Prepare(const Workload &w, std::string *why) = 0;
  // One iteration of the prepared workload: seconds, or negative on error.
  virtual double RunOnce() = 0;
};

// Plain sockets to a tcp-peer at host:port, one per thread. A sync call of
// hixl is mirrored by one command of the same bytes, answered by an ack
// (write) or the bytes (read); an async iteration, whose point is
// pipelining, by one command for the whole slice.
std::unique_ptr<Baseline> MakeTcpBaseline(const std::string &host, int port, uint64_t total_size);

// One thread copies every block of the workload with memcpy, between the
// initiator's buffer `local` and a buffer of its own, in the same layout.
std::unique_ptr<Baseline> MakeMemcpyBaseline(void *local, uint64_t total_size);

}  // namespace hixl_bench
