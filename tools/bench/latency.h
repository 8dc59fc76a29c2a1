// latency.h: small-transfer latency (many single TransferSync calls) and
// connect-to-first-byte, each next to its plain-TCP counterpart measured
// in the same run.
#pragma once

#include <cstdint>
#include <string>

#include "config.h"
#include "hixl_runner.h"
#include "report.h"
#include "tcp_baseline.h"

namespace hixl_bench {

// Where the plain-TCP counterparts go; port 0: no baseline.
struct TcpPeerAddress {
  std::string host;
  int port = 0;
};

// `samples` TransferSync calls of p.size bytes, alternating one for one
// with ping-pongs of the same size over a plain socket, so that both see
// the same noise. False on a failed call.
bool MeasureLatency(HixlInitiator &ini, const TcpPeerAddress &peer, const LatencyPoint &p, int samples,
                    LatencyResult *out);

// `samples` times: Disconnect, then Connect and a first `size`-byte WRITE,
// alternating with a fresh plain TCP connect plus one ping-pong.
bool MeasureConnect(HixlInitiator &ini, const std::string &transport, const TcpPeerAddress &peer, int samples,
                    uint64_t size, ConnectResult *out);

}  // namespace hixl_bench
