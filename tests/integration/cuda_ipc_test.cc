// cuda_ipc_test.cc: the cuda_ipc transport between two engines of this
// process, against the fake CUDA driver (IPC opens map the target's
// allocation at another address nobody may touch). What needs two
// processes on a real GPU (a peer killed mid-copy, real speed) is in
// scripts/gpu_check.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "integration/fixture.h"
#include "support/fake_cuda/fake_cuda.h"

namespace hixl_test {
namespace {

class CudaIpc : public ::testing::Test {
 protected:
  static constexpr size_t kLen = 4u << 20;
  void SetUp() override {
    ASSERT_TRUE(ServeOnFreePort(target_, &name_));
    ASSERT_EQ(ini_.Initialize("127.0.0.1", {}), hixl::SUCCESS);
    dev_t_ = fake().Alloc(kLen);
    dev_i_ = fake().Alloc(kLen);
  }
  void TearDown() override {
    ini_.Finalize();
    target_.Finalize();
  }
  FakeCuda &fake() { return cuda_.fake(); }
  hixl::MemHandle Register(hixl::Hixl &h, uintptr_t addr, size_t len, hixl::MemType type) {
    hixl::MemDesc d{};
    d.addr = addr;
    d.len = len;
    hixl::MemHandle handle = nullptr;
    EXPECT_EQ(h.RegisterMem(d, type, handle), hixl::SUCCESS);
    return handle;
  }
  std::string Transport() {
    hixl::AscendString t;
    EXPECT_EQ(ini_.GetLinkTransport(name_.c_str(), t), hixl::SUCCESS);
    return t.GetString();
  }

  FakeCudaScope cuda_;
  hixl::Hixl target_, ini_;
  std::string name_;
  uintptr_t dev_t_ = 0, dev_i_ = 0;
  LocalBuffer host_i_{kLen};
};

TEST_F(CudaIpc, DeviceAndHostToAPeersDeviceMemoryWithOneOpenPerAllocation) {
  // Two regions of one allocation (a caching allocator's blocks).
  Register(target_, dev_t_, kLen / 2, hixl::MEM_DEVICE);
  Register(target_, dev_t_ + kLen / 2, kLen / 2, hixl::MEM_DEVICE);
  Register(ini_, dev_i_, kLen, hixl::MEM_DEVICE);
  Register(ini_, host_i_.addr(), kLen, hixl::MEM_HOST);
  ASSERT_EQ(ini_.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  ASSERT_EQ(Transport(), "cuda_ipc");
  fake().pending_polls = 3;  // every batch is polled a few times
  uint32_t seed = 7;
  for (bool local_device : {true, false}) {
    const uintptr_t local = local_device ? dev_i_ : host_i_.addr();
    for (hixl::TransferOp op : {hixl::WRITE, hixl::READ}) {
      for (size_t remote_off : {size_t{123}, kLen / 2 + 4096}) {
        const size_t len = 300000, local_off = 77;
        auto want = PatternBytes(len, ++seed);
        if (op == hixl::WRITE) {
          if (local_device) {
            fake().Write(local + local_off, want.data(), len);
          } else {
            std::memcpy(reinterpret_cast<void *>(local + local_off), want.data(), len);
          }
        } else {
          fake().Write(dev_t_ + remote_off, want.data(), len);
        }
        std::vector<hixl::TransferOpDesc> d = {{local + local_off, dev_t_ + remote_off, len}};
        ASSERT_EQ(ini_.TransferSync(name_.c_str(), op, d, 5000), hixl::SUCCESS);
        std::vector<uint8_t> got(len);
        if (op == hixl::READ && !local_device) {
          std::memcpy(got.data(), reinterpret_cast<void *>(local + local_off), len);
        } else if (op == hixl::READ) {
          fake().Read(got.data(), local + local_off, len);
        } else {
          fake().Read(got.data(), dev_t_ + remote_off, len);
        }
        ASSERT_TRUE(got == want) << (op == hixl::WRITE ? "WRITE" : "READ") << " local_device=" << local_device
                                 << " remote_off=" << remote_off;
      }
    }
  }
  EXPECT_EQ(fake().ipc_opens.load(), 1);
  EXPECT_EQ(fake().copies_to_device.load() + fake().copies_from_device.load(), 0);  // no staging
  EXPECT_GT(fake().async_copies.load(), 0);                                          // cuda_ipc's copies
  // Async, polled.
  hixl::TransferReq req = nullptr;
  std::vector<hixl::TransferOpDesc> d = {{dev_i_, dev_t_, 65536}};
  ASSERT_EQ(ini_.TransferAsync(name_.c_str(), hixl::WRITE, d, hixl::TransferArgs{}, req), hixl::SUCCESS);
  hixl::TransferStatus st = hixl::TransferStatus::WAITING;
  ASSERT_TRUE(WaitUntil(
      [&] { return ini_.GetTransferStatus(req, st) == hixl::SUCCESS && st != hixl::TransferStatus::WAITING; }, 5));
  EXPECT_EQ(st, hixl::TransferStatus::COMPLETED);
}

TEST_F(CudaIpc, DeregisterMemClosesThePeersMappingBeforeItReturns) {
  hixl::MemHandle a = Register(target_, dev_t_, kLen / 2, hixl::MEM_DEVICE);
  Register(target_, dev_t_ + kLen / 2, kLen / 2, hixl::MEM_DEVICE);
  Register(ini_, dev_i_, kLen, hixl::MEM_DEVICE);
  ASSERT_EQ(ini_.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  ASSERT_EQ(Transport(), "cuda_ipc");
  std::vector<hixl::TransferOpDesc> into_a = {{dev_i_, dev_t_ + 64, 4096}};
  std::vector<hixl::TransferOpDesc> into_b = {{dev_i_, dev_t_ + kLen / 2 + 64, 4096}};
  ASSERT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, into_a, 5000), hixl::SUCCESS);
  ASSERT_EQ(fake().open_mappings(), 1);
  ASSERT_EQ(target_.DeregisterMem(a), hixl::SUCCESS);
  // Closed before DeregisterMem returned, not some time later.
  EXPECT_EQ(fake().ipc_closes.load(), 1);
  EXPECT_EQ(fake().open_mappings(), 0);
  {
    QuietStderr quiet;
    EXPECT_NE(ini_.TransferSync(name_.c_str(), hixl::WRITE, into_a, 5000), hixl::SUCCESS);
  }
  // The other region of the allocation: opened again, once.
  ASSERT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, into_b, 5000), hixl::SUCCESS);
  EXPECT_EQ(fake().ipc_opens.load(), 2);
  // Registered again: usable again, through the same mapping.
  Register(target_, dev_t_, kLen / 2, hixl::MEM_DEVICE);
  auto want = PatternBytes(4096, 3);
  fake().Write(dev_i_, want.data(), want.size());
  ASSERT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, into_a, 5000), hixl::SUCCESS);
  std::vector<uint8_t> got(4096);
  fake().Read(got.data(), dev_t_ + 64, got.size());
  EXPECT_TRUE(got == want);
  EXPECT_EQ(fake().ipc_opens.load(), 2);
}

TEST_F(CudaIpc, APeerWithHostMemoryTooGetsTcpWhichStagesTheDeviceMemory) {
  LocalBuffer host_t(kLen);
  Register(target_, dev_t_, kLen, hixl::MEM_DEVICE);
  Register(target_, host_t.addr(), kLen, hixl::MEM_HOST);
  Register(ini_, dev_i_, kLen, hixl::MEM_DEVICE);
  ASSERT_EQ(ini_.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  EXPECT_EQ(Transport(), "tcp");
  constexpr size_t kPiece = 4096;
  const auto to_dev = PatternBytes(kPiece, 41), to_host = PatternBytes(kPiece, 42);
  ASSERT_TRUE(fake().Write(dev_i_, to_dev.data(), kPiece));
  ASSERT_TRUE(fake().Write(dev_i_ + kPiece, to_host.data(), kPiece));
  // WRITE: our device memory is copied out of the GPU (staged) for both
  // pieces; the target copies the first into its GPU.
  std::vector<hixl::TransferOpDesc> d = {{dev_i_, dev_t_ + 123, kPiece}, {dev_i_ + kPiece, host_t.addr() + 77, kPiece}};
  ASSERT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, d, 5000), hixl::SUCCESS);
  std::vector<uint8_t> got(kPiece);
  ASSERT_TRUE(fake().Read(got.data(), dev_t_ + 123, kPiece));
  EXPECT_TRUE(got == to_dev) << "device -> the peer's device";
  EXPECT_EQ(std::memcmp(host_t.data() + 77, to_host.data(), kPiece), 0) << "device -> the peer's host";
  EXPECT_GE(fake().copies_from_device.load(), 2) << "our device memory was not staged";
  EXPECT_GE(fake().copies_to_device.load(), 1) << "the target did not stage into its device memory";
  EXPECT_EQ(fake().async_copies.load(), 0) << "a cuda_ipc copy on a tcp link";
  // READ them back into other places of our device memory.
  const int to_device_before = fake().copies_to_device.load();
  std::vector<hixl::TransferOpDesc> back = {{dev_i_ + 4 * kPiece, dev_t_ + 123, kPiece},
                                            {dev_i_ + 6 * kPiece + 5, host_t.addr() + 77, kPiece}};
  ASSERT_EQ(ini_.TransferSync(name_.c_str(), hixl::READ, back, 5000), hixl::SUCCESS);
  ASSERT_TRUE(fake().Read(got.data(), dev_i_ + 4 * kPiece, kPiece));
  EXPECT_TRUE(got == to_dev) << "the peer's device -> device";
  ASSERT_TRUE(fake().Read(got.data(), dev_i_ + 6 * kPiece + 5, kPiece));
  EXPECT_TRUE(got == to_host) << "the peer's host -> device";
  EXPECT_GE(fake().copies_to_device.load(), to_device_before + 2) << "what we read was not staged into our GPU";
}

TEST_F(CudaIpc, HccsDeviceInProtocolDescSelectsIt) {
  ini_.Finalize();
  hixl::Hixl ini;
  ASSERT_EQ(ini.Initialize("127.0.0.1", {{hixl::OPTION_GLOBAL_RESOURCE_CONFIG,
                                          R"({"comm_resource_config.protocol_desc": ["hccs:device"]})"}}),
            hixl::SUCCESS);
  Register(target_, dev_t_, kLen, hixl::MEM_DEVICE);
  ASSERT_EQ(ini.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  hixl::AscendString t;
  ASSERT_EQ(ini.GetLinkTransport(name_.c_str(), t), hixl::SUCCESS);
  EXPECT_STREQ(t.GetString(), "cuda_ipc");
  ini.Finalize();
}

}  // namespace
}  // namespace hixl_test
