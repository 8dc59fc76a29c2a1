// config.h: what hixl_bench was asked to measure (parsed from the command
// line by main.cc) and the measurement points a run is made of.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hixl/hixl_types.h"

namespace hixl_bench {

enum class Mode { kSync, kAsync };

// How a point's blocks sit in memory. hixl merges descriptors that are
// adjacent on both sides into one segment, so contiguous blocks measure one
// big transfer whatever the block size; scattered blocks (remote order
// reversed) keep every block a segment of its own, as KV-cache pages are.
// kOneBlock: every descriptor of a thread names the same block on each side
// (ucx_perftest's one message-sized buffer): what is timed is the transfer,
// with the data in cache, not the memory behind it.
enum class Layout { kScattered, kContiguous, kOneBlock };

const char *ModeName(Mode m);
const char *LayoutName(Layout l);
const char *OpName(hixl::TransferOp op);

struct BenchConfig {
  // Roles and addresses.
  std::string local;
  std::string remote;
  std::string remote_addr_text;
  bool ipv6 = false;

  // What to measure. Every list is a sweep; points are their product.
  std::vector<std::string> transports = {"tcp"};
  std::vector<hixl::TransferOp> ops = {hixl::WRITE, hixl::READ};
  std::vector<uint64_t> block_sizes;
  std::vector<uint64_t> batches = {0};  // descriptors per call; 0: the whole iteration in one call
  std::vector<int> threads = {1};
  std::vector<int> depths = {16};        // async: requests in flight per thread
  Mode mode = Mode::kSync;
  Layout layout = Layout::kScattered;
  uint64_t total_size = 128ull << 20;    // bytes per iteration (and buffer size)
  int iters = 10;
  // Each timed iteration runs the point's calls this many times over the
  // same buffers: a small buffer that stays in cache, as ucx_perftest's
  // one message-sized buffer does, still gives iterations long enough to
  // time. Only without baselines (they move each byte once).
  int repeat = 1;
  int timeout_ms = 30000;
  int streams = 0;                       // tcp.streams_per_link; 0: the engine's default
  std::string auth_key_file;             // auth.key_file of every engine; empty: none (or HIXL_AUTH_KEY_FILE)
  bool no_baseline = false;
  // The target's buffer is a memfd sealed against shrinking, as
  // LLM-DataDist's AllocateCache makes it: over shm the initiator maps it
  // and copies with memcpy.
  bool target_memfd = false;

  // --suite: the preset sweep (suite.cc); these lists are its extra points
  // and are replaced by --batch, --threads and --depth when given.
  bool suite = false;
  std::vector<uint64_t> suite_batches = {1, 16, 256};
  std::vector<int> suite_threads = {2, 4};
  std::vector<int> suite_depths = {1, 4, 16, 64};
  bool throughput = true;                // false: only --latency / --connect-latency
  bool latency = false;
  uint64_t latency_size = 64;
  int latency_samples = 2000;
  bool connect_latency = false;
  int connect_samples = 50;

  std::string json_path;
  std::string csv_path;
  std::string command_line;              // recorded in the JSON
};

// One throughput measurement: `total_size` bytes per iteration, cut into
// `threads` slices, each moved as blocks of `block` bytes in calls (sync) or
// requests (async) of `batch` descriptors.
struct Point {
  std::string transport;
  hixl::TransferOp op = hixl::WRITE;
  Mode mode = Mode::kSync;
  Layout layout = Layout::kScattered;
  uint64_t block = 0;
  uint64_t batch = 0;  // resolved: descriptors per call or request, >= 1
  int threads = 1;
  int depth = 1;       // 1 for sync
};

// "sync" or "async dN": the mode and depth of a point, as tables print it.
std::string ModeText(const Point &p);

struct LatencyPoint {
  std::string transport;
  hixl::TransferOp op = hixl::WRITE;
  uint64_t size = 64;
};

}  // namespace hixl_bench
