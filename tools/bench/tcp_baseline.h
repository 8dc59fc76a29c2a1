// tcp_baseline.h: the yardstick for TCP figures: the same bytes moved over
// one plain TCP socket between two processes, with large send()/recv() calls
// and no protocol beyond a 16-byte command and a 1-byte ack.
#pragma once

#include <cstdint>
#include <string>

namespace hixl_bench {

// Serves baseline clients on `host:port` until stdin closes. Prints
// "READY tcp-peer\n" once listening.
int RunTcpPeer(const std::string &host, int port, uint64_t buffer_size);

class TcpBaselineClient {
 public:
  ~TcpBaselineClient();
  bool Connect(const std::string &host, int port, uint64_t buffer_size);
  // Moves `bytes`: to the peer (write) or from it (read). Returns seconds, or
  // a negative number on error.
  double Move(bool write, uint64_t bytes);
  // One round trip of `bytes` each way (ping-pong); seconds or negative.
  double PingPong(uint64_t bytes);

 private:
  int fd_ = -1;
  void *buf_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace hixl_bench
