// device_memory_test.cc: RegisterMem(MEM_DEVICE) against the fake CUDA
// driver (the same interface libcuda's calls go through), and without any
// driver: what this machine has.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/cuda/cuda_driver.h"
#include "engine/engine.h"
#include "hixl/hixl_log.h"
#include "support/fake_cuda/fake_cuda.h"

namespace hixl {
namespace {

using hixl_test::FakeCudaScope;

MemDesc Desc(uintptr_t addr, size_t len) {
  MemDesc d{};
  d.addr = addr;
  d.len = len;
  return d;
}

class DeviceMemory : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(Engine::Create("127.0.0.1", {}, &engine_), SUCCESS); }
  void TearDown() override { engine_->Shutdown(); }
  Status Register(uintptr_t addr, size_t len, MemType type, MemHandle *h) {
    return engine_->RegisterMem(Desc(addr, len), type, *h);
  }
  std::shared_ptr<Engine> engine_;
};

TEST_F(DeviceMemory, WithoutACudaDriverMemDeviceIsUnsupported) {
  std::string why;
  if (cuda::GetDriver(&why) != nullptr) GTEST_SKIP() << "this host has a CUDA driver and a GPU: the GPU tests cover it";
  EXPECT_NE(why.find("libcuda.so.1"), std::string::npos) << why;
  std::vector<uint8_t> buf(4096);
  MemHandle h = nullptr;
  EXPECT_EQ(Register(reinterpret_cast<uintptr_t>(buf.data()), buf.size(), MEM_DEVICE, &h), UNSUPPORTED);
  EXPECT_EQ(engine_->registered_regions(), 0u);
  // Host memory still registers as before.
  EXPECT_EQ(Register(reinterpret_cast<uintptr_t>(buf.data()), buf.size(), MEM_HOST, &h), SUCCESS);
}

TEST_F(DeviceMemory, AnAllocationAndSubRangesOfItRegister) {
  FakeCudaScope cuda;
  const size_t len = 1 << 20;
  uintptr_t dev = cuda.fake().Alloc(len, /*ordinal=*/1);
  ASSERT_NE(dev, 0u);
  MemHandle whole = nullptr, part = nullptr, part2 = nullptr;
  EXPECT_EQ(Register(dev, len, MEM_DEVICE, &whole), SUCCESS);
  // A caching allocator's blocks: ranges inside one allocation, registered
  // on their own.
  EXPECT_EQ(Register(dev + 4096, 65536, MEM_DEVICE, &part), SUCCESS);
  EXPECT_EQ(Register(dev + len - 100, 100, MEM_DEVICE, &part2), SUCCESS);
  EXPECT_EQ(engine_->registered_regions(), 3u);
  EXPECT_EQ(engine_->DeregisterMem(part), SUCCESS);
  EXPECT_EQ(engine_->DeregisterMem(whole), SUCCESS);
  EXPECT_EQ(engine_->DeregisterMem(part2), SUCCESS);
}

TEST_F(DeviceMemory, WrongKindsAndRangesPastTheAllocationAreParamInvalid) {
  FakeCudaScope cuda;
  const size_t len = 1 << 20;
  uintptr_t dev = cuda.fake().Alloc(len);
  uintptr_t next = cuda.fake().Alloc(len);
  std::vector<uint8_t> host(8192);
  std::vector<std::string> logged;
  SetLogSink([](LogLevel level, const char *line, void *user) {
    if (level == LogLevel::kError) static_cast<std::vector<std::string> *>(user)->emplace_back(line);
  }, &logged);
  MemHandle h = nullptr;
  EXPECT_EQ(Register(reinterpret_cast<uintptr_t>(host.data()), host.size(), MEM_DEVICE, &h), PARAM_INVALID);
  EXPECT_EQ(Register(dev, len, MEM_HOST, &h), PARAM_INVALID);
  EXPECT_EQ(Register(dev + 8, 64, MEM_HOST, &h), PARAM_INVALID);
  EXPECT_EQ(Register(dev, len + 1, MEM_DEVICE, &h), PARAM_INVALID);
  EXPECT_EQ(Register(dev + len - 8, 16, MEM_DEVICE, &h), PARAM_INVALID);
  SetLogSink(nullptr, nullptr);
  (void)next;
  EXPECT_EQ(engine_->registered_regions(), 0u);
  ASSERT_EQ(logged.size(), 5u);
  EXPECT_NE(logged[0].find("not CUDA device memory"), std::string::npos) << logged[0];
  EXPECT_NE(logged[1].find("register it as MEM_DEVICE"), std::string::npos) << logged[1];
  EXPECT_NE(logged[3].find("past the end of its CUDA allocation"), std::string::npos) << logged[3];
}

}  // namespace
}  // namespace hixl
