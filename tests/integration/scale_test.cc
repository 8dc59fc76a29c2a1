// scale_test.cc: one server engine serves 256 client engines (in four
// other processes) writing at once, with the same threads as for two.
#include "integration/fixture.h"
#include "integration/net_util.h"

namespace hixl_test {
namespace {

TEST(Scale, ServerServes256ClientEnginesWithAFixedThreadCount) {
  constexpr size_t kClients = 256;
  constexpr size_t kProcesses = 4;
  constexpr size_t kSlice = 64u << 10;
  constexpr uint64_t kSeed = 1000;
  PeerProcess server;
  ASSERT_TRUE(server.Start());
  size_t id = 0;
  uintptr_t raddr = server.AllocRegistered(kClients * kSlice, &id);
  ASSERT_NE(raddr, 0u);

  PeerProcess swarm[kProcesses];
  for (auto &p : swarm) ASSERT_TRUE(p.Start());
  const size_t per = kClients / kProcesses;
  // Engine j of process p is client p * per + j: it owns that slice of the
  // server's buffer, filled with seed kSeed + p * per + j.
  auto connect = [&](size_t p, size_t n) {
    return swarm[p].Command("SWARM_CONNECT " + server.name() + " " + std::to_string(n) + " " + std::to_string(kSlice) +
                                " " + std::to_string(kSeed + p * per),
                            60000);
  };
  ASSERT_EQ(connect(0, 2), "OK 2");  // two peers first
  const int threads_at_2 = ThreadCount(server.pid());
  ASSERT_GT(threads_at_2, 0);
  ASSERT_EQ(connect(0, per - 2), "OK " + std::to_string(per - 2));
  for (size_t p = 1; p < kProcesses; ++p) ASSERT_EQ(connect(p, per), "OK " + std::to_string(per));
  const int threads_at_256 = ThreadCount(server.pid());
  EXPECT_EQ(threads_at_256, threads_at_2) << "the server grew threads with its peers";

  // Every client writes its slice at once (all processes in parallel).
  // Send to every process before reading any reply, so that the writes overlap.
  for (size_t p = 0; p < kProcesses; ++p) {
    ASSERT_TRUE(swarm[p].Send("SWARM_WRITE " + server.name() + " " + std::to_string(raddr) + " " +
                              std::to_string(p * per)));
  }
  for (size_t p = 0; p < kProcesses; ++p) {
    EXPECT_EQ(swarm[p].ReadLine(60000), "OK " + std::to_string(per)) << "process " << p;
  }
  for (size_t i = 0; i < kClients; ++i) {
    // SWARM_CONNECT seeded slice i (global index) with kSeed + i.
    std::vector<uint8_t> expect(kSlice);
    FillPattern(expect.data(), kSlice, kSeed + i);
    ASSERT_EQ(server.HashOf(id, i * kSlice, kSlice), Hash(expect.data(), kSlice)) << "slice " << i;
  }
  EXPECT_EQ(ThreadCount(server.pid()), threads_at_2);
}

}  // namespace
}  // namespace hixl_test
