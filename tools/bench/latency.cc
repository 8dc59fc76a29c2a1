#include "latency.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench_util.h"

namespace hixl_bench {

bool MeasureLatency(HixlInitiator &ini, const TcpPeerAddress &peer, const LatencyPoint &p, int samples,
                    LatencyResult *out) {
  TcpConn conn;
  const bool baseline = peer.port > 0;
  if (baseline && !conn.Connect(peer.host, peer.port)) {
    std::fprintf(stderr, "latency: cannot connect to the tcp-peer\n");
    return false;
  }
  std::vector<char> pp(p.size);
  std::vector<double> hixl_s, tcp_s;
  // Warm-up, not recorded: first-touch faults, caches, socket buffers.
  const int warm = std::max(10, samples / 10);
  for (int i = -warm; i < samples; ++i) {
    double a = ini.TransferOnce(p.op, p.size);
    if (a < 0) return false;
    double b = baseline ? conn.PingPong(pp.data(), p.size) : 0;
    if (b < 0) {
      std::fprintf(stderr, "latency: ping-pong failed\n");
      return false;
    }
    if (i < 0) continue;
    hixl_s.push_back(a * 1e6);
    if (baseline) tcp_s.push_back(b * 1e6);
  }
  *out = {};
  out->transport = p.transport;
  out->op = p.op;
  out->size = p.size;
  out->samples = samples;
  out->p50_us = Percentile(hixl_s, 50);
  out->p99_us = Percentile(hixl_s, 99);
  out->baseline = baseline ? "tcp-pingpong" : "none";
  if (baseline) {
    out->baseline_p50_us = Percentile(tcp_s, 50);
    out->baseline_p99_us = Percentile(tcp_s, 99);
    out->ratio_p50 = out->p50_us / out->baseline_p50_us;
  }
  return true;
}

bool MeasureConnect(HixlInitiator &ini, const std::string &transport, const TcpPeerAddress &peer, int samples,
                    uint64_t size, ConnectResult *out) {
  const bool baseline = peer.port > 0;
  std::vector<char> pp(size);
  std::vector<double> hixl_ms, tcp_ms;
  for (int i = -1; i < samples; ++i) {  // one warm-up round
    double a = ini.ConnectToFirstByte(size);
    if (a < 0) return false;
    double b = 0;
    if (baseline) {
      TcpConn conn;
      double t0 = NowSeconds();
      if (!conn.Connect(peer.host, peer.port) || conn.PingPong(pp.data(), size) < 0) {
        std::fprintf(stderr, "connect latency: plain TCP connect + ping-pong failed\n");
        return false;
      }
      b = NowSeconds() - t0;
    }
    if (i < 0) continue;
    hixl_ms.push_back(a * 1e3);
    if (baseline) tcp_ms.push_back(b * 1e3);
  }
  *out = {};
  out->transport = transport;
  out->samples = samples;
  out->p50_ms = Percentile(hixl_ms, 50);
  out->p99_ms = Percentile(hixl_ms, 99);
  out->baseline = baseline ? "tcp-connect-pingpong" : "none";
  if (baseline) {
    out->baseline_p50_ms = Percentile(tcp_ms, 50);
    out->baseline_p99_ms = Percentile(tcp_ms, 99);
  }
  return true;
}

}  // namespace hixl_bench
