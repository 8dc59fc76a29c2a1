// write_fence_test.cc: the frames of a timed-out WRITE still on the wire are
// never overtaken by later requests (WriteFence).
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
#include "integration/raw_peer.h"

namespace hixl_test {
namespace {

// A scripted target of a tcp link with two data streams that answers nothing
// unless told: the first WRITE frame each data stream brings is left
// unanswered (so that its request times out with the frame on the wire,
// which a real target would still apply when it got to it) until
// answer[stream] is set; the later WRITE frames are counted per stream.
struct ScriptedTarget {
  static constexpr uint64_t kRegion = 0x10000000, kRegionLen = 1u << 20;
  SilentListener listener;
  std::atomic<bool> stop{false};
  std::atomic<bool> answer[2] = {false, false};
  std::atomic<int> first_on[2] = {0, 0};  // 1 once that stream's first WRITE came
  std::atomic<int> later_on[2] = {0, 0};
  std::thread thread;

  ScriptedTarget() { thread = std::thread([this] { Run(); }); }
  ~ScriptedTarget() {
    stop.store(true);
    thread.join();
  }
  std::string name() const { return listener.name(); }

  void Run() {
    std::vector<int> all = AcceptStreams(listener.fd, 3, {{kRegion, kRegionLen}});
    // all[0] is the control stream: kept open, never read.
    std::vector<int> fds(all.begin() + std::min<size_t>(all.size(), 1), all.end());
    uint64_t first_id[2] = {0, 0};
    bool answered[2] = {false, false};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fds.size() == 2 && !stop.load() && std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 2; ++i) {
        if (!answered[i] && answer[i].load() && first_on[i].load() != 0) {
          hixl::wire::FrameHeader a;
          a.type = hixl::wire::MsgType::kWriteAck;
          a.req_id = first_id[i];
          SendAll(fds[i], Frame(a, {}));
          answered[i] = true;
        }
      }
      pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
      if (poll(p, 2, 20) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if ((p[i].revents & POLLIN) == 0) continue;
        uint8_t hdr[hixl::wire::kHeaderSize];
        hixl::wire::FrameHeader h;
        auto frame_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        std::vector<uint8_t> rest;
        if (!RecvExactly(fds[i], hdr, sizeof(hdr), frame_deadline) ||
            hixl::wire::DecodeHeader(hdr, &h) != hixl::wire::HeaderError::kOk ||
            (rest.resize(h.body_len + h.payload_len), !RecvExactly(fds[i], rest.data(), rest.size(), frame_deadline))) {
          stop.store(true);
          break;
        }
        if (h.type != hixl::wire::MsgType::kWriteReq) continue;
        if (first_on[i].load() == 0) {
          first_id[i] = h.req_id;
          first_on[i].store(1);
        } else {
          ++later_on[i];
        }
      }
    }
    for (int fd : all) close(fd);
  }
};

// An engine linked to a ScriptedTarget, whose async requests time out after
// 300 ms.
class WriteFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(e_.Initialize("127.0.0.1", ResourceConfig("{\"async_transfer.timeout_ms\": 300}")), hixl::SUCCESS);
    ASSERT_EQ(e_.Connect(t_.name().c_str(), 3000), hixl::SUCCESS);
    ASSERT_NE(RegisterWith(e_, local_), nullptr);
  }
  void TearDown() override { e_.Finalize(); }
  // A 256 KiB WRITE (one frame) into the target's region.
  hixl::TransferReq PostStale() {
    hixl::TransferReq r = nullptr;
    EXPECT_EQ(e_.TransferAsync(t_.name().c_str(), hixl::WRITE, {{local_.addr(), ScriptedTarget::kRegion, 256u << 10}},
                               hixl::TransferArgs{}, r),
              hixl::SUCCESS);
    return r;
  }
  // `n` 4 KiB WRITEs into the target's region.
  void PostLater(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      hixl::TransferReq r = nullptr;
      ASSERT_EQ(e_.TransferAsync(t_.name().c_str(), hixl::WRITE,
                                 {{local_.addr(), ScriptedTarget::kRegion + i * 4096, 4096}}, hixl::TransferArgs{}, r),
                hixl::SUCCESS);
    }
  }

  ScriptedTarget t_;
  hixl::Hixl e_;
  LocalBuffer local_{1u << 20};
};

// A WRITE that timed out left its frame on the wire of one stream: later
// requests must go behind it on that stream, not on the other one, where
// the target could apply them first and then overwrite them with the stale
// frame (the async review saw that happen).
TEST_F(WriteFenceTest, RequestsAfterATimedOutWriteGoBehindItsFrames) {
  EXPECT_EQ(WaitFor(e_, PostStale(), 5), hixl::TransferStatus::TIMEOUT);
  ASSERT_TRUE(WaitUntil([&] { return t_.first_on[0] + t_.first_on[1] == 1; }, 2));
  const int behind = t_.first_on[0].load() != 0 ? 0 : 1;
  PostLater(8);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  t_.answer[behind].store(true);  // the stale frame is done with: what waited behind it may go
  // (Requests still waiting when their 300 ms are up never go out at all.)
  WaitUntil([&] { return t_.later_on[behind].load() == 8; }, 3);
  EXPECT_GT(t_.later_on[behind].load(), 0) << "the later requests did not go behind the timed-out one";
  EXPECT_EQ(t_.later_on[1 - behind].load(), 0) << "later requests went on the other stream";
}

// Timed-out WRITEs left frames on both streams: later requests wait until
// one of them is answered, then go behind the other (not on the stream that
// has none left: the other's stale frame could land after them).
TEST_F(WriteFenceTest, RequestsAfterTimedOutWritesOnTwoStreamsWait) {
  hixl::TransferReq a[2] = {PostStale(), PostStale()};  // one frame each, on the two streams in turn
  for (auto r : a) EXPECT_EQ(WaitFor(e_, r, 5), hixl::TransferStatus::TIMEOUT);
  ASSERT_TRUE(WaitUntil([&] { return t_.first_on[0] + t_.first_on[1] == 2; }, 2));
  PostLater(8);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(t_.later_on[0] + t_.later_on[1], 0) << "later requests went out while both streams had stale frames";
  t_.answer[0].store(true);  // stream 1 still has one: they go behind it
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(t_.later_on[0].load(), 0) << "later requests went on stream 0 while stream 1 had a stale frame";
  t_.answer[1].store(true);
  // (Requests still waiting when their 300 ms are up never go out at all.)
  WaitUntil([&] { return t_.later_on[1].load() == 8; }, 3);
  EXPECT_GT(t_.later_on[1].load(), 0) << "the later requests did not go behind the stale frame of stream 1";
  EXPECT_EQ(t_.later_on[0].load(), 0) << "later requests went on the stream without stale frames left";
}

}  // namespace
}  // namespace hixl_test
