// Unit tests for InitiatorStream (src/transport/tcp/initiator_stream.h) with
// a hand-driven target: the other end of an AF_UNIX socketpair.
#include "transport/tcp/initiator_stream.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "common/completion.h"
#include "common/io_worker.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace hixl::tcp {
namespace {

std::vector<uint8_t> Frame(wire::MsgType type, uint64_t id, const std::vector<uint8_t> &body) {
  wire::FrameHeader h;
  h.type = type;
  h.req_id = id;
  h.body_len = static_cast<uint32_t>(body.size());
  std::vector<uint8_t> out(wire::kHeaderSize);
  wire::EncodeHeader(h, out.data());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// Reads one frame's header (and skips its body) from `fd` within 5 s.
bool ReadHeader(int fd, wire::FrameHeader *h) {
  uint8_t raw[wire::kHeaderSize];
  size_t got = 0;
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got < sizeof(raw) && std::chrono::steady_clock::now() < limit) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, raw + got, sizeof(raw) - got, 0);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return got == sizeof(raw) && wire::DecodeHeader(raw, h) == wire::HeaderError::kOk && h->body_len == 0;
}

// Found by fuzz/handshake_initiator: a REVOKE with id 0 was answered by a
// REVOKE_ACK with a fresh id (wire_id 0 meant "none"), so the ACK echoed
// no REVOKE and the target, which matches them by id, hung up.
TEST(InitiatorStreamTest, ARevokeAckEchoesItsRevokesIdZeroToo) {
  int sp[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
  IoWorker worker("initiator-stream-test");
  ASSERT_TRUE(worker.Start());
  // As ControlLink answers a REVOKE.
  auto on_push = [](InitiatorStream &stream, wire::MsgType type, uint64_t id, std::vector<uint8_t> &&, uint64_t) {
    if (type != wire::MsgType::kRevoke) return;
    std::vector<std::unique_ptr<Request>> ack;
    ack.push_back(MakeRequest(wire::MsgType::kRevokeAck, {}, std::make_shared<Completion>()));
    ack.back()->wire_id = id;
    ack.back()->done->AddParts(1);
    stream.Submit(&ack);
  };
  auto stream = std::make_shared<InitiatorStream>(sp[0], &worker, "test stream", on_push);
  worker.Add(stream, EPOLLIN);
  std::vector<uint8_t> region;
  wire::EncodeRevoke({0x1000, 4096}, &region);
  for (uint64_t id : {uint64_t{0}, uint64_t{5}}) {
    std::vector<uint8_t> f = Frame(wire::MsgType::kRevoke, id, region);
    ASSERT_EQ(send(sp[1], f.data(), f.size(), MSG_NOSIGNAL), static_cast<ssize_t>(f.size()));
    wire::FrameHeader h;
    ASSERT_TRUE(ReadHeader(sp[1], &h)) << id;
    EXPECT_EQ(h.type, wire::MsgType::kRevokeAck);
    EXPECT_EQ(h.req_id, id);
  }
  stream->Close("test over");
  worker.Stop();
  close(sp[1]);
}

}  // namespace
}  // namespace hixl::tcp
