// engine_shutdown_test.cc: calls that reach an Engine while it shuts down
// (through a Hixl whose Finalize races them, which the Python binding
// allows) leave nothing behind that Finalize did not clean up.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine.h"

namespace hixl {
namespace {

TEST(EngineShutdown, RegisterMemDuringShutdownIsFAILEDAndLeavesNoRegion) {
  // Shutdown revokes the regions it finds from same-host peers; a region
  // registered after it looked would be served (and copied into by such
  // peers) with no one to revoke it.
  std::shared_ptr<Engine> e;
  ASSERT_EQ(Engine::Create("127.0.0.1", {}, &e), SUCCESS);
  e->Shutdown();
  std::vector<uint8_t> buf(4096);
  MemDesc d{};
  d.addr = reinterpret_cast<uintptr_t>(buf.data());
  d.len = buf.size();
  MemHandle h = reinterpret_cast<MemHandle>(1);
  EXPECT_EQ(e->RegisterMem(d, MEM_HOST, h), FAILED);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(e->registered_regions(), 0u);
}

}  // namespace
}  // namespace hixl
