// engine_options_fuzzer.cc: ParseEngineOptions (src/engine/options.cc), the
// map an application gives Initialize, above all GlobalResourceConfig's JSON.
//
// Input: lines "key=value" (the key up to the first '='), so that the seeds
// in corpus/engine_options/ read as what they are. The parser must return
// one of its three statuses and never throw; a failure says why and leaves
// the output alone; a success holds only values inside the documented ranges.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "common/log.h"
#include "engine/options.h"
#include "fuzz_check.h"
#include "transport/registry.h"

namespace {

std::map<std::string, std::string> Options(const uint8_t *data, size_t size) {
  std::map<std::string, std::string> out;
  const std::string text(reinterpret_cast<const char *>(data), size);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  return out;
}

bool InRange(uint32_t v, uint32_t lo, uint32_t hi) { return v >= lo && v <= hi; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  hixl::SetLogLevel(hixl::LogLevel::kError);  // unknown keys are warned about: not news here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const auto options = Options(data, size);
  hixl::EngineOptions out;
  out.max_regions = 1;  // no parse stores this: it tells a touched output from an untouched one
  std::string why;
  hixl::Status s = hixl::ParseEngineOptions(options, &out, &why);
  FUZZ_CHECK(s == hixl::SUCCESS || s == hixl::PARAM_INVALID || s == hixl::UNSUPPORTED);
  if (s != hixl::SUCCESS) {
    FUZZ_CHECK(!why.empty());
    FUZZ_CHECK(out.max_regions == 1);
    return 0;
  }
  FUZZ_CHECK((out.buffer_pool_count == 0) == (out.buffer_pool_mib == 0));
  FUZZ_CHECK(out.buffer_pool_count <= 1024 && out.buffer_pool_mib <= 1024);
  FUZZ_CHECK(out.rdma_traffic_class <= 255 && out.rdma_traffic_class % 4 == 0);
  FUZZ_CHECK(out.rdma_service_level <= 7);
  FUZZ_CHECK(InRange(out.connect_pool_threads, 1, 64));
  FUZZ_CHECK(InRange(out.connect_pool_queue, 1, 65535));
  FUZZ_CHECK(InRange(out.max_channel, 1, 512));
  FUZZ_CHECK(!out.has_waterlines ||
             (out.low_waterline > 0 && out.low_waterline < out.high_waterline && out.high_waterline < 1));
  FUZZ_CHECK(out.listen_port >= -1 && out.listen_port <= 65535);
  // A transport's own fields ("tcp.streams_per_link") wait for it to check
  // them: kept by transport and key, for transports this build has.
  for (const auto &[transport, fields] : out.transport_config) {
    FUZZ_CHECK(hixl::Transports().Knows(transport));
    for (const auto &field : fields) FUZZ_CHECK(!field.first.empty());
  }
  FUZZ_CHECK(InRange(out.io_threads, 1, 64));
  FUZZ_CHECK(InRange(out.max_regions, 256, 65536));
  FUZZ_CHECK(out.heartbeat_ms == 0 || InRange(out.heartbeat_ms, 100, 3600000));
  FUZZ_CHECK(InRange(out.async_timeout_ms, 1, 86400000));
  for (const auto &p : out.protocols) FUZZ_CHECK(p.find(':') != std::string::npos);

  // Parsing is a function of its input.
  hixl::EngineOptions again;
  FUZZ_CHECK(hixl::ParseEngineOptions(options, &again, &why) == hixl::SUCCESS);
  FUZZ_CHECK(again.max_channel == out.max_channel && again.protocols == out.protocols &&
             again.listen_port == out.listen_port && again.heartbeat_ms == out.heartbeat_ms &&
             again.transport_config == out.transport_config);
  return 0;
}
