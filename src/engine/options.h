// options.h: the engine's options, parsed and range-checked from the map given
// to Initialize (docs/API.md lists every key and range).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hixl/hixl_types.h"

namespace hixl {

// Half the cores, 1 to 4: on a small machine the peer's threads and the
// application need the other half (measured on 2 cores: one I/O thread moves
// as much as two, and async requests do better with one).
uint32_t DefaultIoThreads();

struct EngineOptions {
  // BufferPool "N:S": N staging buffers of S MiB each; 0:0 is off.
  uint32_t buffer_pool_count = 4;
  uint32_t buffer_pool_mib = 8;
  bool auto_connect = false;
  uint32_t rdma_traffic_class = 132;
  uint32_t rdma_service_level = 4;
  std::string local_comm_res;

  // GlobalResourceConfig
  uint32_t connect_pool_threads = 2;
  uint32_t connect_pool_queue = 128;
  uint32_t max_channel = 512;
  bool has_waterlines = false;
  double high_waterline = 0;
  double low_waterline = 0;
  std::vector<std::string> protocols;  // "tcp:host", ...; empty: every transport
  int32_t listen_port = -1;            // -1: not given

  // [beyond] GlobalResourceConfig fields of this project.
  uint32_t io_threads = DefaultIoThreads();  // "tcp.io_threads": epoll worker threads per engine
  uint32_t max_regions = 65536;        // RegisterMem past this: RESOURCE_EXHAUSTED
  uint32_t heartbeat_ms = 10000;       // idle links are pinged this often; 0: off
  uint32_t async_timeout_ms = 60000;   // TransferAsync requests end TIMEOUT after this
  // Fields "<transport>.<key>" of a transport this build knows (such as
  // tcp.streams_per_link), by transport and key, values as text: each
  // transport checks its own when the engine starts.
  std::map<std::string, std::map<std::string, std::string>> transport_config;
  // "auth.key_file": the shared secret peers must prove (empty: see
  // HIXL_AUTH_KEY_FILE; neither: no authentication).
  std::string auth_key_file;

};

// Parses `options` into `out`. Returns SUCCESS, PARAM_INVALID or UNSUPPORTED;
// on failure `why` names the key and the offending value.
Status ParseEngineOptions(const std::map<std::string, std::string> &options, EngineOptions *out, std::string *why);

}  // namespace hixl
