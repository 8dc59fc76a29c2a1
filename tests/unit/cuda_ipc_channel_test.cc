// cuda_ipc_channel_test.cc: the cuda_ipc channel against the fake CUDA
// driver: a REVOKE is answered only once the copies in flight into that
// allocation are done and its mapping is closed, without blocking the
// thread that asked; batches checked after it fail.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "memory/remote_regions.h"
#include "support/fake_cuda/fake_cuda.h"
#include "transport/cuda_ipc/cuda_ipc_channel.h"
#include "transport/cuda_ipc/ipc_section.h"

namespace hixl::cuda_ipc {
namespace {

template <typename Cond>
bool WaitFor(Cond cond, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(CudaIpcChannel, ARevokeWaitsForCopiesInFlightThenClosesTheMapping) {
  hixl_test::FakeCuda fake;
  const size_t len = 1 << 20;
  const uintptr_t dev = fake.Alloc(len);
  IpcSection sec;
  std::string why;
  ASSERT_TRUE(fake.IpcExport(0, dev, &sec.handle, &why)) << why;
  sec.alloc_base = dev;
  sec.alloc_len = len;
  wire::RegionEntry e;
  e.range = {dev, len};
  e.kind = wire::MemKind::kDevice;
  e.sections.push_back({kWireId, {}});
  EncodeSection(sec, &e.sections.back().bytes);
  RemoteRegions regions;
  regions.Replace({e});
  auto table = regions.Snapshot();
  const RemoteRegion *rr = table->Find(dev, len);
  ASSERT_NE(rr, nullptr);

  cuda::Stream stream = nullptr;
  ASSERT_TRUE(fake.StreamCreate(0, &stream, &why));
  std::vector<uint8_t> src(4096, 0x5a);
  {
    CudaIpcChannel ch(&fake, 0, stream, &regions, [] { return true; });
    fake.hold_events = true;  // the GPU is busy with the copy
    Piece p{reinterpret_cast<uintptr_t>(src.data()), dev + 16, src.size(), nullptr, rr};
    auto done = std::make_shared<Completion>();
    ch.Submit(/*is_write=*/true, &p, 1, done, Deadline::AfterMillis(5000), /*caller_waits=*/false);
    EXPECT_EQ(ch.open_mappings(), 1u);
    EXPECT_FALSE(ch.idle());

    regions.Revoke(dev, len, /*order=*/1);
    std::atomic<bool> acked{false};
    // Asked on a thread of its own (an I/O thread asks), it returns while
    // the copy is still running: the answer is held, not waited for. (Were
    // it to wait, it would return only when the copy ended, which it does
    // not until hold_events is cleared below.)
    std::atomic<bool> returned{false};
    std::thread asker([&] {
      ch.BeforeRevokeAck(wire::RegionInfo{dev, len}, [&acked] { acked = true; });
      returned = true;
    });
    const bool returned_while_copying = WaitFor([&] { return returned.load(); }, 5);
    if (!returned_while_copying) fake.hold_events = false;  // let it end, to fail below rather than hang
    asker.join();
    ASSERT_TRUE(returned_while_copying) << "BeforeRevokeAck waited for the copy in flight";
    // The poller has looked at the copy's event several times since, and
    // still holds the answer.
    const int queries = fake.event_queries.load();
    ASSERT_TRUE(WaitFor([&] { return fake.event_queries.load() >= queries + 5; }, 5));
    EXPECT_FALSE(acked.load());
    EXPECT_EQ(fake.open_mappings(), 1);

    fake.hold_events = false;  // the copy ends
    ASSERT_TRUE(WaitFor([&] { return acked.load(); }, 5));
    EXPECT_EQ(fake.open_mappings(), 0);
    EXPECT_EQ(fake.ipc_closes.load(), 1);
    EXPECT_EQ(done->Wait(Deadline::AfterMillis(1000)), SUCCESS);
    std::vector<uint8_t> got(src.size());
    ASSERT_TRUE(fake.Read(got.data(), dev + 16, got.size()));
    EXPECT_TRUE(got == src);

    // A batch checked against the old table, submitted after the revoke,
    // touches nothing.
    auto late = std::make_shared<Completion>();
    ch.Submit(true, &p, 1, late, Deadline::AfterMillis(1000), true);
    EXPECT_EQ(late->Wait(Deadline::AfterMillis(1000)), FAILED);
    EXPECT_EQ(fake.ipc_opens.load(), 1);
  }
  // The channel's end destroys its stream and every event.
  EXPECT_EQ(fake.live_streams(), 0);
  EXPECT_EQ(fake.live_events(), 0);
}

}  // namespace
}  // namespace hixl::cuda_ipc
