// Unit tests for ControlLink (src/control/control_link.h) against a target
// played by hand: a thread listening on 127.0.0.1 that answers frame by
// frame.
#include "control/control_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/io_worker.h"
#include "memory/remote_regions.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl {
namespace {

bool RecvAll(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t got = recv(fd, p, n, 0);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// One frame from the initiator (header and body); false at its end.
bool ReadFrame(int fd, wire::FrameHeader *h) {
  uint8_t raw[wire::kHeaderSize];
  if (!RecvAll(fd, raw, sizeof(raw)) || wire::DecodeHeader(raw, h) != wire::HeaderError::kOk) return false;
  std::vector<uint8_t> body(h->body_len);
  return RecvAll(fd, body.data(), body.size());
}

void SendFrame(int fd, wire::MsgType type, uint64_t id, uint32_t status, const std::vector<uint8_t> &body) {
  wire::FrameHeader h;
  h.type = type;
  h.req_id = id;
  h.status = status;
  h.body_len = static_cast<uint32_t>(body.size());
  std::vector<uint8_t> out(wire::kHeaderSize);
  wire::EncodeHeader(h, out.data());
  out.insert(out.end(), body.begin(), body.end());
  ASSERT_EQ(send(fd, out.data(), out.size(), MSG_NOSIGNAL), static_cast<ssize_t>(out.size()));
}

// Found by fuzz/handshake_initiator: a target that answered REGIONS_REQ
// with a status of its choice (NOTIFY_FAILED, PARAM_INVALID, ...) made Open
// (and so Connect) return that status, though Open promises SUCCESS,
// TIMEOUT or FAILED.
TEST(ControlLinkTest, ARegionPageRefusedWithAnyStatusFailsOpen) {
  for (uint32_t status : {NOTIFY_FAILED, PARAM_INVALID, RESOURCE_EXHAUSTED}) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(lfd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
    socklen_t len = sizeof(a);
    ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &len), 0);
    ASSERT_EQ(listen(lfd, 1), 0);
    const std::string address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    // The target: its table has two regions, the HELLO_ACK holds the first
    // only; the page asked for next is refused with `status`.
    std::thread target([lfd, status] {
      int fd = accept(lfd, nullptr, nullptr);
      timeval tv{5, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      wire::FrameHeader h;
      if (!ReadFrame(fd, &h) || h.type != wire::MsgType::kHello) {
        ADD_FAILURE() << "no HELLO";
        close(fd);
        return;
      }
      wire::HelloAck ack;
      ack.target = "127.0.0.1:1";
      ack.regions.total = 2;
      ack.regions.count = 1;
      ack.regions.entries.push_back({{0x1000, 4096}, wire::MemKind::kHost, {}});
      std::vector<uint8_t> body;
      wire::EncodeHelloAck(ack, &body);
      SendFrame(fd, wire::MsgType::kHelloAck, 0, SUCCESS, body);
      if (ReadFrame(fd, &h) && h.type == wire::MsgType::kRegionsReq) {
        SendFrame(fd, wire::MsgType::kRegionsResp, h.req_id, status, {});
      } else {
        ADD_FAILURE() << "no REGIONS_REQ";
      }
      while (ReadFrame(fd, &h)) {
      }
      close(fd);
    });
    std::vector<std::unique_ptr<IoWorker>> workers;
    workers.push_back(std::make_unique<IoWorker>("control-link-test"));
    ASSERT_TRUE(workers[0]->Start());
    ControlLink::Params p;
    p.local_name = "127.0.0.1:2";
    std::string why;
    ASSERT_TRUE(ParseEngineAddress(address, &p.remote, &why));
    p.regions = std::make_shared<RemoteRegions>();
    std::unique_ptr<ControlLink> link;
    wire::HelloAck ack;
    EXPECT_EQ(ControlLink::Open(p, workers, Deadline::AfterMillis(5000), &link, &ack, &why), FAILED) << status;
    EXPECT_EQ(link, nullptr);
    link.reset();
    target.join();
    workers[0]->Stop();
    close(lfd);
  }
}

}  // namespace
}  // namespace hixl
