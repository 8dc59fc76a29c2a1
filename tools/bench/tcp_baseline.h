// tcp_baseline.h: the yardstick for TCP figures: the same bytes moved over
// plain TCP sockets between two processes, with large send()/recv() calls
// and no protocol beyond a 24-byte command and a 1-byte ack.
#pragma once

#include <cstdint>
#include <string>

namespace hixl_bench {

// Serves baseline clients on `host:port` until stdin closes, every
// connection on a thread of its own with a buffer of `buffer_size` bytes
// (commands give offsets into it). Prints "READY tcp-peer\n" once listening.
int RunTcpPeer(const std::string &host, int port, uint64_t buffer_size);

// One connection to a tcp-peer. The caller owns the local memory.
class TcpConn {
 public:
  TcpConn() = default;
  TcpConn(const TcpConn &) = delete;
  TcpConn &operator=(const TcpConn &) = delete;
  ~TcpConn();
  bool Connect(const std::string &host, int port);
  void Close();
  // Moves `bytes` between `local` and the peer's buffer at `remote_offset`:
  // to the peer and waits for its ack (write), or from it (read). False on
  // error. (The caller times whole iterations; no clock is read here.)
  bool Move(bool write, char *local, uint64_t remote_offset, uint64_t bytes);
  // One round trip of `bytes` each way (ping-pong); seconds or negative.
  double PingPong(char *local, uint64_t bytes);

 private:
  int fd_ = -1;
};

}  // namespace hixl_bench
