// tcp_transport.h: the transport of last resort, and the one between hosts
// without RDMA: a link's data goes over tcp.streams_per_link TCP streams of
// its own (HELLO stream indexes 1..N; the control stream is index 0), with
// batches cut into frames and spread over them (TcpLink). The target serves
// the frames from its registered memory, checking every segment.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "transport/transport.h"

namespace hixl::tcp {

constexpr uint16_t kWireId = 1;

class TcpTransport final : public Transport {
 public:
  // Reads "tcp.streams_per_link" (1..16, default 2) from env.config.
  static Status Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why);

  const char *name() const override { return "tcp"; }
  uint16_t wire_id() const override { return kWireId; }
  bool CanReach(const PeerView &peer, MemKinds kinds, std::string *why) override;
  Status Connect(const PeerView &peer, const LinkSetup &link, Deadline deadline, std::unique_ptr<Channel> *out,
                 std::string *why) override;

  static constexpr uint32_t kDefaultStreams = 2;  // chosen by measurement: docs/performance.md

 private:
  explicit TcpTransport(const TransportEnv &env) : env_(env) {}
  const TransportEnv env_;
  uint32_t streams_ = kDefaultStreams;
};

}  // namespace hixl::tcp
