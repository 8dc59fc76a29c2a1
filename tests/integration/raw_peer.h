// raw_peer.h: a test playing one side of the wire protocol by hand (raw streams,
// handshakes, frames), for tests of what a misbehaving peer can and cannot do.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "common/log.h"
#include "engine/host_identity.h"
#include "integration/fixture.h"
#include "integration/net_util.h"
#include "support/region_entries.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/listener.h"
#include "transport/tcp/target_stream.h"
#include "transport/tcp/tcp_transport.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl_test {

// A raw stream that has completed its handshake with `target`, or -1.
// `claim_pid`: the process on this host we claim to be, offering direct
// copies (0: nobody in particular); `ack_out`: the target's answer.
inline int RawHandshake(const std::string &target, uint64_t nonce, uint32_t heartbeat_ms = 0,
                        uint32_t claim_pid = 0, hixl::wire::HelloAck *ack_out = nullptr,
                        const char *source = nullptr) {
  int fd = RawConnect(target, source);
  if (fd < 0) return -1;
  hixl::wire::Hello hello;
  hello.initiator = "raw";
  hello.target = target;
  hello.link_nonce = nonce;
  hello.heartbeat_ms = heartbeat_ms;
  if (claim_pid != 0) {
    hello.host = hixl::LocalHostIdentity();
    hixl::wire::Section offer;
    offer.id = hixl::shm::kWireId;
    hixl::shm::EncodePid(claim_pid, &offer.bytes);
    hello.offers.push_back(offer);
  }
  std::vector<uint8_t> body;
  hixl::wire::EncodeHello(hello, &body);
  hixl::wire::FrameHeader h;
  h.type = hixl::wire::MsgType::kHello;
  auto f = Frame(h, body);
  uint8_t hdr[hixl::wire::kHeaderSize];
  hixl::wire::FrameHeader ack;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::vector<uint8_t> ack_body;
  bool ok = send(fd, f.data(), f.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(f.size()) &&
            RecvExactly(fd, hdr, sizeof(hdr), deadline) &&
            hixl::wire::DecodeHeader(hdr, &ack) == hixl::wire::HeaderError::kOk &&
            (ack_body.resize(ack.body_len), RecvExactly(fd, ack_body.data(), ack_body.size(), deadline)) &&
            ack.status == hixl::SUCCESS;
  if (ok && ack_out != nullptr) ok = hixl::wire::DecodeHelloAck(ack_body.data(), ack_body.size(), ack_out);
  if (!ok) {
    close(fd);
    return -1;
  }
  return fd;
}

inline std::vector<uint8_t> ReadRequest(uint64_t id, const std::vector<hixl::wire::Segment> &segs) {
  std::vector<uint8_t> body;
  hixl::wire::EncodeSegments(segs.data(), segs.size(), &body);
  hixl::wire::FrameHeader h;
  h.type = hixl::wire::MsgType::kReadReq;
  h.req_id = id;
  return Frame(h, body);
}

// A field of /proc/<pid>/status in MiB ("VmRSS:", or "VmHWM:" for the peak).
inline long StatusMiB(pid_t pid, const char *field = "VmRSS:") {
  std::FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, field, n) == 0) kib = std::atol(line + n);
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib / 1024;
}

inline long PeerRssMiB(pid_t pid) { return StatusMiB(pid); }

// Reads one reply frame (its body and payload dropped); false if none came
// by `deadline`.
inline bool ReadReply(int fd, hixl::wire::FrameHeader *r, std::chrono::steady_clock::time_point deadline) {
  uint8_t hdr[hixl::wire::kHeaderSize];
  if (!RecvExactly(fd, hdr, sizeof(hdr), deadline) ||
      hixl::wire::DecodeHeader(hdr, r) != hixl::wire::HeaderError::kOk) {
    return false;
  }
  std::vector<uint8_t> sink(64u << 10);
  for (uint64_t left = r->body_len + r->payload_len; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, sink.size()));
    if (!RecvExactly(fd, sink.data(), n, deadline)) return false;
    left -= n;
  }
  return true;
}

// Plays a target on another host for up to `n` streams of one link on
// `listen_fd`: accepts each and answers its HELLO (offering `regions`).
// Returns the streams that got that far.
inline std::vector<int> AcceptStreams(int listen_fd, int n, std::vector<hixl::wire::RegionInfo> regions) {
  std::vector<int> fds;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (int stream = 0; stream < n; ++stream) {
    pollfd p{listen_fd, POLLIN, 0};
    if (poll(&p, 1, 3000) <= 0) break;
    int fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) break;
    uint8_t hdr[hixl::wire::kHeaderSize];
    hixl::wire::FrameHeader h;
    std::vector<uint8_t> hello;
    if (!RecvExactly(fd, hdr, sizeof(hdr), deadline) ||
        hixl::wire::DecodeHeader(hdr, &h) != hixl::wire::HeaderError::kOk ||
        (hello.resize(h.body_len), !RecvExactly(fd, hello.data(), hello.size(), deadline))) {
      close(fd);
      break;
    }
    hixl::wire::HelloAck ack;
    ack.host.boot_id = "another host";
    ack.regions = hixl_test::HostPage(regions);
    std::vector<uint8_t> body;
    hixl::wire::EncodeHelloAck(ack, &body);
    hixl::wire::FrameHeader a;
    a.type = hixl::wire::MsgType::kHelloAck;
    if (!SendAll(fd, Frame(a, body))) {
      close(fd);
      break;
    }
    fds.push_back(fd);
  }
  return fds;
}

}  // namespace hixl_test
