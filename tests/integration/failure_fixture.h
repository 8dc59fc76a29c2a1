// failure_fixture.h: an initiator linked to a peer process that serves 64 MiB, for
// tests of what happens when the peer fails, freezes or misbehaves.
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

constexpr size_t kBig = 64u << 20;

class FailureTest : public PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    remote_addr_ = peer_.AllocRegistered(kBig, &remote_id_);
    ASSERT_NE(remote_addr_, 0u);
    local_ = std::make_unique<LocalBuffer>(kBig);
    RegisterLocal(*local_);
    ASSERT_EQ(Connect(), hixl::SUCCESS);
  }

  std::vector<hixl::TransferOpDesc> BigBatch() const {
    std::vector<hixl::TransferOpDesc> d;
    for (size_t off = 0; off < kBig; off += 1u << 20) d.push_back({local_->addr() + off, remote_addr_ + off, 1u << 20});
    return d;
  }

  // Runs batches until one fails; kills the peer with `sig` meanwhile.
  // Returns the failing status and how long that call took.
  hixl::Status RunUntilFailure(hixl::TransferOp op, int sig, int timeout_ms, double *call_seconds) {
    std::atomic<bool> started{false};
    hixl::Status result = hixl::SUCCESS;
    std::thread worker([&] {
      auto batch = BigBatch();
      for (int i = 0; i < 1000 && result == hixl::SUCCESS; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        started = true;
        result = Transfer(op, batch, timeout_ms);
        *call_seconds = SecondsSince(t0);
      }
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    peer_.Kill(sig);
    worker.join();
    return result;
  }

  // The local buffer does not change any more: the engine let go of it.
  void ExpectLocalBufferQuiet() {
    uint64_t h1 = Hash(local_->data(), kBig);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(Hash(local_->data(), kBig), h1);
  }

  std::unique_ptr<LocalBuffer> local_;
  uintptr_t remote_addr_ = 0;
  size_t remote_id_ = 0;
};

// Tests that freeze the peer: over shm a frozen peer still gets its data
// (the copies need no CPU of the peer), so these are about TCP.
class FailureTcpTest : public FailureTest {};

}  // namespace hixl_test
