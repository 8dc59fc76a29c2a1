// The UCX plug-in when the peer dies, stops or cannot be reached: errors
// come in bounded time, a cut batch leaves the caller's buffers alone, and
// a new peer works afterwards.
#include <signal.h>

#include <chrono>
#include <cstring>

#include "support/pattern.h"
#include "ucx/ucx_harness.h"

namespace hixl_test {
namespace {

constexpr size_t kMiB = 1 << 20;
using Clock = std::chrono::steady_clock;

class UcxFailure : public UcxPairTest {
 protected:
  // UCX finds a dead peer over shared memory only by its keepalive (every
  // 20 s by default); the engine will set it from its heartbeat interval.
  std::vector<hixl_ucx_setting_t> ExtraSettings() const override { return {{"KEEPALIVE_INTERVAL", "1s"}}; }

  // A small write and read back on the current endpoint.
  void ExpectTransfersWork() {
    PeerRegion r = Region(64 * 1024);
    ASSERT_GE(r.id, 0);
    Buffer src(64 * 1024), back(64 * 1024);
    FillPattern(src.data(), src.size(), 11);
    ASSERT_EQ(Run(HIXL_UCX_OP_PUT, {{src.addr(), r.addr, src.size(), r.rkey}}), HIXL_UCX_OK);
    ASSERT_EQ(Run(HIXL_UCX_OP_GET, {{back.addr(), r.addr, back.size(), r.rkey}}), HIXL_UCX_OK);
    EXPECT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0);
  }
};

TEST_P(UcxFailure, AKilledTargetFailsTheBatchInBoundedTimeAndANewTargetWorks) {
  PeerRegion r = Region(64 * kMiB);
  ASSERT_GE(r.id, 0);
  Buffer src(64 * kMiB);
  std::vector<hixl_ucx_piece_t> pieces;
  for (size_t i = 0; i < 64; ++i) {
    pieces.push_back({src.addr() + i * kMiB, r.addr + i * kMiB + (i % 2), kMiB - 1, r.rkey});
  }
  // Stopped first: the batch cannot finish before the kill.
  peer_.process().Kill(SIGSTOP);
  BatchWait &wait = NewWait();
  ASSERT_EQ(api_->batch_post(ep_, HIXL_UCX_OP_PUT, pieces.data(), pieces.size(), BatchWait::OnDone, &wait),
            HIXL_UCX_OK);
  EXPECT_FALSE(wait.Wait(200));
  Clock::time_point killed = Clock::now();
  peer_.process().Kill(SIGKILL);
  // Reaped, as its parent would: over shared memory UCX's keepalive looks
  // for the process, and a zombie still counts as one.
  peer_.process().Stop(1000);
  ASSERT_TRUE(wait.Wait(30000)) << "no error 30 s after the peer was killed";
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed).count();
  RecordProperty("failed_after_ms", std::to_string(ms));
  EXPECT_EQ(wait.status(), HIXL_UCX_ERR_PEER_FAILED);
  EXPECT_TRUE(ep_errors_.Wait(30000));
  EXPECT_EQ(ep_errors_.calls(), 1);
  // Later batches are refused at once.
  BatchWait &late = NewWait();
  EXPECT_EQ(api_->batch_post(ep_, HIXL_UCX_OP_PUT, pieces.data(), 1, BatchWait::OnDone, &late),
            HIXL_UCX_ERR_PEER_FAILED);
  EXPECT_EQ(api_->ep_destroy(ep_, 1000), HIXL_UCX_OK);
  ep_ = nullptr;
  EXPECT_EQ(late.calls(), 0);

  StartPeerAndConnect();
  ExpectTransfersWork();
}

TEST_P(UcxFailure, ACutReadNeverWritesTheLocalBufferAfterDestroyReturns) {
  PeerRegion r = Region(16 * kMiB);
  ASSERT_GE(r.id, 0);
  ASSERT_EQ(peer_.process().Command("FILL " + std::to_string(r.id) + " 5"), "OK");
  Buffer dst(16 * kMiB);
  std::memset(dst.data(), 0xAB, dst.size());
  std::vector<hixl_ucx_piece_t> pieces;
  // Small pieces (emulated gets, answered by the peer) and large ones.
  for (size_t i = 0; i < 256; ++i) pieces.push_back({dst.addr() + i * 4096, r.addr + i * 4096 + 8, 4000, r.rkey});
  pieces.push_back({dst.addr() + 2 * kMiB, r.addr + 2 * kMiB, 14 * kMiB, r.rkey});

  peer_.process().Kill(SIGSTOP);
  BatchWait &wait = NewWait();
  ASSERT_EQ(api_->batch_post(ep_, HIXL_UCX_OP_GET, pieces.data(), pieces.size(), BatchWait::OnDone, &wait),
            HIXL_UCX_OK);
  // The deadline: the batch is still in flight, so it is cut.
  EXPECT_FALSE(wait.Wait(300));
  Clock::time_point cut = Clock::now();
  hixl_ucx_status_t st = api_->ep_destroy(ep_, 0);
  ep_ = nullptr;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - cut).count();
  EXPECT_LT(ms, 5000);
  EXPECT_EQ(st, HIXL_UCX_ERR_CANCELED);
  EXPECT_EQ(wait.calls(), 1);  // before ep_destroy returned
  EXPECT_EQ(wait.status(), HIXL_UCX_ERR_CANCELED);
  std::vector<uint8_t> snapshot(dst.data(), dst.data() + dst.size());

  // The peer runs again and answers what it had been sent; a new endpoint's
  // transfers complete after those answers (shared memory keeps order).
  peer_.process().Kill(SIGCONT);
  ASSERT_EQ(api_->ep_create(ctx_.get(), peer_.address.data(), peer_.address.size(), ErrorWait::OnError, &ep_errors_,
                            &ep_),
            HIXL_UCX_OK);
  ExpectTransfersWork();
  EXPECT_EQ(std::memcmp(snapshot.data(), dst.data(), dst.size()), 0) << "the cut READ wrote the buffer later";
}

TEST_P(UcxFailure, DestroyingTheContextCancelsBatchesInFlight) {
  PeerRegion r = Region(4 * kMiB);
  ASSERT_GE(r.id, 0);
  Buffer dst(4 * kMiB);
  hixl_ucx_piece_t piece{dst.addr(), r.addr, dst.size(), r.rkey};
  peer_.process().Kill(SIGSTOP);
  BatchWait &wait = NewWait();
  ASSERT_EQ(api_->batch_post(ep_, HIXL_UCX_OP_GET, &piece, 1, BatchWait::OnDone, &wait), HIXL_UCX_OK);
  EXPECT_FALSE(wait.Wait(200));
  ep_ = nullptr;  // the context takes it with it
  EXPECT_EQ(ctx_.Destroy(), HIXL_UCX_OK);
  EXPECT_EQ(wait.calls(), 1);
  EXPECT_EQ(wait.status(), HIXL_UCX_ERR_CANCELED);
  // Not resumed: answering a get of an initiator that is gone can abort it
  // (the UCX defect below).
  peer_.process().Kill(SIGKILL);
}

// A known UCX defect (1.13.1 and every release since, as of 1.19): over its
// emulated transports (tcp, shared memory) the target answers a get, and
// acknowledges puts, through ucp_request_send(); when the endpoint back to
// an initiator that has gone has already failed, the reply's send returns
// the failed lane's error and UCX aborts the target process ("Fatal:
// unexpected error: Endpoint timeout", ucp_request_try_send). RDMA gets and
// puts involve no reply from the target. Run it with
// --gtest_also_run_disabled_tests: the peer dies in about half the runs.
TEST_P(UcxFailure, DISABLED_ATargetOutlivesAnInitiatorThatVanishesMidRead) {
  PeerRegion r = Region(4 * kMiB);
  ASSERT_GE(r.id, 0);
  Buffer dst(4 * kMiB);
  std::vector<hixl_ucx_piece_t> pieces;
  for (size_t i = 0; i < 64; ++i) pieces.push_back({dst.addr() + i * 65536, r.addr + i * 65536, 65536, r.rkey});
  peer_.process().Kill(SIGSTOP);
  BatchWait &wait = NewWait();
  ASSERT_EQ(api_->batch_post(ep_, HIXL_UCX_OP_GET, pieces.data(), pieces.size(), BatchWait::OnDone, &wait),
            HIXL_UCX_OK);
  ep_ = nullptr;
  EXPECT_EQ(ctx_.Destroy(), HIXL_UCX_OK);
  peer_.process().Kill(SIGCONT);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(peer_.process().Command("HASH " + std::to_string(r.id) + " 0 8", 1000).substr(0, 2), "OK")
        << "the target died";
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxFailure, ::testing::Values("tcp", "sm"),
                         [](const ::testing::TestParamInfo<std::string> &i) { return i.param; });

// Each side's transports leave out all of the other's: ep_create says so at
// once, never hangs.
TEST(UcxUnreachable, TransportsThatCannotReachThePeerFailFast) {
  std::string why;
  const hixl_ucx_api_t *api = UcxApi(&why);
  ASSERT_NE(api, nullptr) << why;
  ClearUcxEnvironment();
  for (auto [mine, theirs] : {std::pair<std::string, std::string>{"sm", "tcp"}, {"tcp", "sm"}}) {
    SCOPED_TRACE(mine + " to " + theirs);
    UcxPeer peer;
    ASSERT_TRUE(peer.Start(TransportNamed(theirs)));
    UcxContext ctx;
    ASSERT_EQ(ctx.Create(TransportNamed(mine)), HIXL_UCX_OK);
    hixl_ucx_ep_t *ep = nullptr;
    Clock::time_point t0 = Clock::now();
    EXPECT_EQ(api->ep_create(ctx.get(), peer.address.data(), peer.address.size(), nullptr, nullptr, &ep),
              HIXL_UCX_ERR_UNREACHABLE);
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), 5000);
    EXPECT_EQ(ep, nullptr);
    peer.process().Stop();
  }
}

}  // namespace
}  // namespace hixl_test
