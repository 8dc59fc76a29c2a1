// device_staging_test.cc: device memory over host-only transports, against
// the fake CUDA driver (whose device memory the process cannot touch: a
// memcpy or a socket call on it instead of a driver copy fails the test).
// Both engines run in this process; the fake is the driver of both.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "integration/fixture.h"
#include "support/fake_cuda/fake_cuda.h"

namespace hixl_test {
namespace {

using Options = std::map<hixl::AscendString, hixl::AscendString>;

hixl::MemHandle Register(hixl::Hixl &h, uintptr_t addr, size_t len, hixl::MemType type) {
  hixl::MemDesc d{};
  d.addr = addr;
  d.len = len;
  hixl::MemHandle handle = nullptr;
  EXPECT_EQ(h.RegisterMem(d, type, handle), hixl::SUCCESS);
  return handle;
}

class DeviceStaging : public ::testing::Test {
 protected:
  static constexpr size_t kLen = 24u << 20;  // more than the buffer pool's 4 x 8 MiB can take in one round

  void SetUp() override {
    ASSERT_TRUE(ServeOnFreePort(target_, &name_));
    ASSERT_EQ(ini_.Initialize("127.0.0.1", ini_options_), hixl::SUCCESS);
    dev_t_ = fake().Alloc(kLen);
    dev_i_ = fake().Alloc(kLen);
    ASSERT_NE(dev_t_, 0u);
    ASSERT_NE(dev_i_, 0u);
  }
  void TearDown() override {
    ini_.Finalize();
    target_.Finalize();
  }
  FakeCuda &fake() { return cuda_.fake(); }

  Options ini_options_;
  FakeCudaScope cuda_;
  hixl::Hixl target_, ini_;
  std::string name_;
  uintptr_t dev_t_ = 0, dev_i_ = 0;
  LocalBuffer host_t_{kLen}, host_i_{kLen};
};

// Every pair of kinds, READ and WRITE, at offsets inside larger regions.
TEST_F(DeviceStaging, EveryKindPairOverTcpIsByteExact) {
  Register(target_, dev_t_, kLen, hixl::MEM_DEVICE);
  Register(target_, host_t_.addr(), kLen, hixl::MEM_HOST);
  Register(ini_, dev_i_, kLen, hixl::MEM_DEVICE);
  Register(ini_, host_i_.addr(), kLen, hixl::MEM_HOST);
  ASSERT_EQ(ini_.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  hixl::AscendString transport;
  ASSERT_EQ(ini_.GetLinkTransport(name_.c_str(), transport), hixl::SUCCESS);
  // shm copies into the peer's memory itself: it cannot reach a GPU's.
  EXPECT_STREQ(transport.GetString(), "tcp");

  struct Side {
    const char *name;
    bool device;
    uintptr_t base;
  };
  const Side locals[] = {{"host", false, host_i_.addr()}, {"device", true, dev_i_}};
  const Side remotes[] = {{"host", false, host_t_.addr()}, {"device", true, dev_t_}};
  auto put = [this](const Side &s, uintptr_t at, const std::vector<uint8_t> &v) {
    if (s.device) {
      fake().Write(at, v.data(), v.size());
    } else {
      std::memcpy(reinterpret_cast<void *>(at), v.data(), v.size());
    }
  };
  auto get = [this](const Side &s, uintptr_t at, size_t n) {
    std::vector<uint8_t> v(n);
    if (s.device) {
      fake().Read(v.data(), at, n);
    } else {
      std::memcpy(v.data(), reinterpret_cast<void *>(at), n);
    }
    return v;
  };
  uint32_t seed = 1;
  for (const Side &l : locals) {
    for (const Side &r : remotes) {
      for (hixl::TransferOp op : {hixl::WRITE, hixl::READ}) {
        // One large descriptor (several relay rounds) and two small ones
        // at odd offsets.
        const std::vector<std::pair<size_t, size_t>> parts = {{4099, 20u << 20}, {(21u << 20) + 1, 777}, {kLen - 5, 5}};
        std::vector<hixl::TransferOpDesc> descs;
        std::vector<std::vector<uint8_t>> want;
        for (const auto &[off, len] : parts) {
          const size_t roff = off ^ 64;  // other offsets on the remote side
          want.push_back(PatternBytes(len, ++seed));
          if (op == hixl::WRITE) {
            put(l, l.base + off, want.back());
          } else {
            put(r, r.base + roff, want.back());
          }
          descs.push_back({l.base + off, r.base + roff, len});
        }
        SCOPED_TRACE(std::string(op == hixl::WRITE ? "WRITE " : "READ ") + l.name + " -> " + r.name);
        ASSERT_EQ(ini_.TransferSync(name_.c_str(), op, descs, 10000), hixl::SUCCESS);
        for (size_t i = 0; i < parts.size(); ++i) {
          const auto &[off, len] = parts[i];
          std::vector<uint8_t> got = op == hixl::WRITE ? get(r, r.base + (off ^ 64), len) : get(l, l.base + off, len);
          ASSERT_TRUE(got == want[i]) << "descriptor " << i;
        }
      }
    }
  }
  // Staged both ways, through the driver, and the initiator's staging
  // buffers page-locked once (the target's engine too: it registered
  // device memory) until Finalize.
  EXPECT_GT(fake().copies_to_device.load(), 0);
  EXPECT_GT(fake().copies_from_device.load(), 0);
  EXPECT_EQ(fake().pinned.load(), 2);
  ini_.Finalize();
  target_.Finalize();
  EXPECT_EQ(fake().pinned.load(), 0);
}

TEST_F(DeviceStaging, AFailedDeviceCopyFailsTheTransfer) {
  Register(target_, dev_t_, kLen, hixl::MEM_DEVICE);
  Register(ini_, dev_i_, kLen, hixl::MEM_DEVICE);
  Register(ini_, host_i_.addr(), kLen, hixl::MEM_HOST);
  ASSERT_EQ(ini_.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  fake().fail_copies = true;
  QuietStderr quiet;
  // Our side's staging copy, then the target's.
  std::vector<hixl::TransferOpDesc> local_dev = {{dev_i_, dev_t_, 4096}};
  std::vector<hixl::TransferOpDesc> remote_dev = {{host_i_.addr(), dev_t_, 4096}};
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, local_dev, 5000), hixl::FAILED);
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::READ, local_dev, 5000), hixl::FAILED);
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, remote_dev, 5000), hixl::FAILED);
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::READ, remote_dev, 5000), hixl::FAILED);
  // The link is still good once the driver is.
  fake().fail_copies = false;
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, remote_dev, 5000), hixl::SUCCESS);
}

class DeviceStagingPoolOff : public DeviceStaging {
 protected:
  void SetUp() override {
    ini_options_ = {{hixl::OPTION_BUFFER_POOL, "0:0"}};
    DeviceStaging::SetUp();
  }
};

TEST_F(DeviceStagingPoolOff, LocalDeviceMemoryOverTcpNeedsTheBufferPool) {
  Register(target_, host_t_.addr(), kLen, hixl::MEM_HOST);
  Register(ini_, dev_i_, kLen, hixl::MEM_DEVICE);
  ASSERT_EQ(ini_.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> d = {{dev_i_, host_t_.addr(), 4096}};
  QuietStderr quiet;
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, d, 5000), hixl::PARAM_INVALID);
}

TEST_F(DeviceStaging, AShmLinkRefusesDeviceMemoryRegisteredAfterIt) {
  Register(target_, host_t_.addr(), kLen, hixl::MEM_HOST);
  Register(ini_, host_i_.addr(), kLen, hixl::MEM_HOST);
  ASSERT_EQ(ini_.Connect(name_.c_str(), 5000), hixl::SUCCESS);
  hixl::AscendString transport;
  ASSERT_EQ(ini_.GetLinkTransport(name_.c_str(), transport), hixl::SUCCESS);
  if (std::string(transport.GetString()) != "shm") GTEST_SKIP() << "shm is not available here";
  Register(target_, dev_t_, kLen, hixl::MEM_DEVICE);
  std::vector<hixl::TransferOpDesc> d = {{host_i_.addr(), dev_t_, 4096}};
  QuietStderr quiet;
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, d, 5000), hixl::PARAM_INVALID);
  // Our own device memory on the shm link is staged by us: fine.
  Register(ini_, dev_i_, kLen, hixl::MEM_DEVICE);
  std::vector<hixl::TransferOpDesc> mine = {{dev_i_ + 8, host_t_.addr() + 16, 4096}};
  auto want = PatternBytes(4096, 99);
  fake().Write(dev_i_ + 8, want.data(), want.size());
  EXPECT_EQ(ini_.TransferSync(name_.c_str(), hixl::WRITE, mine, 5000), hixl::SUCCESS);
  EXPECT_EQ(std::memcmp(host_t_.data() + 16, want.data(), want.size()), 0);
}

}  // namespace
}  // namespace hixl_test
