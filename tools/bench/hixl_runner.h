// hixl_runner.h: the hixl side of a measurement: one engine restricted to
// one transport, a registered buffer, a link to the target, and the loops
// that drive TransferSync / TransferAsync over a Workload.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "config.h"
#include "hixl/hixl.h"
#include "workload.h"

namespace hixl_bench {

class HixlInitiator {
 public:
  HixlInitiator() = default;
  HixlInitiator(const HixlInitiator &) = delete;
  HixlInitiator &operator=(const HixlInitiator &) = delete;
  ~HixlInitiator();

  // Initializes an engine on `local_host` (no port: a client) whose
  // protocol_desc allows only `transport`, registers a buffer of
  // cfg.total_size and connects to `remote`. False with `why`: a transport
  // this build lacks shows up here, as a failed Connect.
  bool Setup(const BenchConfig &cfg, const std::string &transport, const std::string &local_host,
             const std::string &remote, uintptr_t remote_addr, std::string *why);

  void *buffer() const { return buf_; }
  uintptr_t local_addr() const { return reinterpret_cast<uintptr_t>(buf_); }
  uintptr_t remote_addr() const { return remote_addr_; }

  // One iteration of `w`: seconds, or negative on error (logged).
  double RunOnce(const Workload &w);
  // The longest single TransferAsync call of the last RunOnce, in seconds
  // (0 for sync points): what posting one request costs the caller.
  double last_post_max() const { return static_cast<double>(post_max_ns_.load()) / 1e9; }
  // One TransferSync of `size` bytes at the start of both buffers: seconds.
  double TransferOnce(hixl::TransferOp op, uint64_t size);
  // Disconnects, then times Connect plus a first `size`-byte WRITE (the
  // connect-to-first-byte time a fresh peer sees). Leaves the link up.
  double ConnectToFirstByte(uint64_t size);

 private:
  bool RunSync(const std::vector<Call> &calls, hixl::TransferOp op);
  bool RunAsync(const std::vector<Call> &calls, hixl::TransferOp op, int depth);

  hixl::Hixl engine_;
  bool initialized_ = false;
  void *buf_ = nullptr;
  uint64_t size_ = 0;
  hixl::AscendString remote_;  // built once: timed calls take it as is
  uintptr_t remote_addr_ = 0;
  int timeout_ms_ = 30000;
  std::atomic<uint64_t> post_max_ns_{0};  // written by every RunAsync thread
};

// The GlobalResourceConfig JSON for `transport` ("tcp" -> "tcp:host").
std::string GlobalResourceConfig(const BenchConfig &cfg, const std::string &transport);

}  // namespace hixl_bench
