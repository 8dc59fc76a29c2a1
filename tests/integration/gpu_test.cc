// gpu_test.cc: device memory on a real GPU, two processes (this one and a
// hixl_test_peer) on one GPU. Without a GPU every test here is skipped,
// saying why; scripts/gpu_check.sh runs them where there is one. ctest runs
// them everywhere as FakeLibcuda.* against a fake libcuda.so.1 (two
// processes, two device address spaces: tests/support/fake_cuda). (The
// same logic runs against the in-process fake driver too: cuda_ipc_test.cc,
// device_staging_test.cc.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "integration/fixture.h"
#include "support/gpu_memory.h"
#include "support/pattern.h"

namespace hixl_test {
namespace {

constexpr size_t kAlloc = 64u << 20;

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("HIXL_TEST_FAKE_LIBCUDA") != nullptr) {
      // ctest's FakeLibcuda.* runs: against tests/support/fake_cuda's
      // libcuda.so.1, never skipped, never on a real GPU by mistake.
      ASSERT_TRUE(GpuMemory::Get().ok()) << GpuMemory::Get().why();
      void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
      ASSERT_TRUE(lib != nullptr && dlsym(lib, "hixl_fake_libcuda") != nullptr)
          << "HIXL_TEST_FAKE_LIBCUDA is set, but the libcuda.so.1 loaded is not the fake (LD_LIBRARY_PATH?)";
      dlclose(lib);
      return;
    }
    if (!GpuMemory::Get().ok()) {
      GTEST_SKIP() << "no GPU here (" << GpuMemory::Get().why() << "): not yet run on this host; "
                   << "scripts/gpu_check.sh runs it on a GPU host (ctest's FakeLibcuda.* run it against a fake)";
    }
  }
  GpuMemory &gpu() { return GpuMemory::Get(); }

  // Local device memory filled with pattern `seed`.
  uintptr_t DeviceFilled(size_t len, uint64_t seed) {
    uintptr_t p = gpu().Alloc(len);
    std::vector<uint8_t> tmp(len);
    FillPattern(tmp.data(), len, seed);
    EXPECT_TRUE(gpu().ToDevice(p, tmp.data(), len));
    return p;
  }
  uint64_t DeviceHash(uintptr_t p, size_t len) {
    std::vector<uint8_t> tmp(len);
    EXPECT_TRUE(gpu().FromDevice(tmp.data(), p, len));
    return Hash(tmp.data(), len);
  }
  static uint64_t PatternHash(uint64_t seed, size_t off, size_t len) {
    std::vector<uint8_t> tmp(len);
    FillPattern(tmp.data(), len, seed, off);
    return Hash(tmp.data(), len);
  }
  static hixl::MemHandle Register(hixl::Hixl &h, uintptr_t addr, size_t len, hixl::MemType t,
                                  hixl::Status want = hixl::SUCCESS) {
    hixl::MemDesc d{};
    d.addr = addr;
    d.len = len;
    hixl::MemHandle handle = nullptr;
    EXPECT_EQ(h.RegisterMem(d, t, handle), want);
    return handle;
  }
};

TEST_F(Gpu, MemDeviceRegistersCudaMemoryAndRefusesTheWrongKind) {
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  uintptr_t dev = gpu().Alloc(kAlloc);
  ASSERT_NE(dev, 0u);
  LocalBuffer host(4096);
  QuietStderr quiet;
  hixl::MemHandle whole = Register(e, dev, kAlloc, hixl::MEM_DEVICE);
  hixl::MemHandle part = Register(e, dev + 4096, 1 << 20, hixl::MEM_DEVICE);  // a block inside it
  Register(e, host.addr(), host.size(), hixl::MEM_DEVICE, hixl::PARAM_INVALID);
  Register(e, dev + 8192, 4096, hixl::MEM_HOST, hixl::PARAM_INVALID);
  Register(e, dev + kAlloc - 16, 32, hixl::MEM_DEVICE, hixl::PARAM_INVALID);
  EXPECT_EQ(e.DeregisterMem(part), hixl::SUCCESS);
  EXPECT_EQ(e.DeregisterMem(whole), hixl::SUCCESS);
  e.Finalize();
  gpu().Free(dev);
}

struct Path {
  const char *name;
  const char *protocol;    // the initiator's protocol_desc ("" = default choice)
  bool peer_has_device;    // the peer registers device memory (else host)
  const char *transport;   // the link's transport then
};

class GpuTwoProcess : public Gpu, public ::testing::WithParamInterface<Path> {};

// Device <-> device, device <-> host, host <-> device; READ and WRITE; at
// offsets inside larger allocations; bytes hashed on both sides.
TEST_P(GpuTwoProcess, EveryLocalKindReadAndWriteAtOffsets) {
  const Path &path = GetParam();
  PeerProcess peer;
  ASSERT_TRUE(peer.Start(false));
  auto w = Words(peer.Command(path.peer_has_device ? "DALLOC " + std::to_string(kAlloc)
                                                   : "ALLOC " + std::to_string(kAlloc)));
  ASSERT_EQ(w.size(), 3u) << "peer: " << (w.empty() ? "" : w[0]);
  const std::string id = w[1];
  const uintptr_t remote = std::stoull(w[2]);
  const size_t reg_off = 1u << 20, reg_len = 32u << 20;  // a block inside the allocation
  ASSERT_EQ(Words(peer.Command("REG " + id + " " + std::to_string(reg_off) + " " + std::to_string(reg_len)))[0], "OK");

  hixl::Hixl ini;
  std::map<hixl::AscendString, hixl::AscendString> opts;
  if (*path.protocol != '\0') {
    opts[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] =
        (std::string(R"({"comm_resource_config.protocol_desc": [")") + path.protocol + "\"]}").c_str();
  }
  ASSERT_EQ(ini.Initialize("127.0.0.1", opts), hixl::SUCCESS);
  const uint64_t seed = 0x5eed;
  uintptr_t dev = DeviceFilled(kAlloc, seed);
  LocalBuffer host(kAlloc);
  FillPattern(host.data(), kAlloc, seed);
  Register(ini, dev + 4096, kAlloc - 8192, hixl::MEM_DEVICE);
  Register(ini, host.addr(), kAlloc, hixl::MEM_HOST);
  ASSERT_EQ(ini.Connect(peer.name().c_str(), 5000), hixl::SUCCESS);
  hixl::AscendString t;
  ASSERT_EQ(ini.GetLinkTransport(peer.name().c_str(), t), hixl::SUCCESS);
  EXPECT_STREQ(t.GetString(), path.transport);

  for (bool local_device : {true, false}) {
    for (size_t len : {size_t{1} << 20, size_t{7} << 20, size_t{4099}}) {
      const size_t loff = 8192 + 333, roff = reg_off + 65 + len % 4096;
      const uintptr_t local = (local_device ? dev : host.addr()) + loff;
      SCOPED_TRACE(std::string(local_device ? "device" : "host") + " len " + std::to_string(len));
      // WRITE: our pattern lands at the peer's offset.
      std::vector<hixl::TransferOpDesc> d = {{local, remote + roff, len}};
      ASSERT_EQ(ini.TransferSync(peer.name().c_str(), hixl::WRITE, d, 10000), hixl::SUCCESS);
      EXPECT_EQ(std::stoull(Words(peer.Command("HASH " + id + " " + std::to_string(roff) + " " +
                                               std::to_string(len)))[1]),
                PatternHash(seed, loff, len));
      // READ: the peer's pattern lands at our offset.
      const uint64_t peer_seed = seed + len;
      ASSERT_EQ(Words(peer.Command("FILL " + id + " " + std::to_string(peer_seed)))[0], "OK");
      ASSERT_EQ(ini.TransferSync(peer.name().c_str(), hixl::READ, d, 10000), hixl::SUCCESS);
      const uint64_t got = local_device ? DeviceHash(local, len) : Hash(reinterpret_cast<void *>(local), len);
      EXPECT_EQ(got, PatternHash(peer_seed, roff, len));
      // Put our side back as it was for the next round.
      std::vector<uint8_t> tmp(len);
      FillPattern(tmp.data(), len, seed, loff);
      if (local_device) {
        ASSERT_TRUE(gpu().ToDevice(local, tmp.data(), len));
      } else {
        std::memcpy(reinterpret_cast<void *>(local), tmp.data(), len);
      }
    }
  }
  ini.Finalize();
  peer.Stop();
  gpu().Free(dev);
}

INSTANTIATE_TEST_SUITE_P(Paths, GpuTwoProcess,
                         ::testing::Values(Path{"cuda_ipc", "", true, "cuda_ipc"},
                                           Path{"tcp_staged", "tcp:host", true, "tcp"},
                                           Path{"peer_host_shm", "", false, "shm"}),
                         [](const ::testing::TestParamInfo<Path> &i) { return std::string(i.param.name); });

TEST_F(Gpu, IpcMappingsFollowDeregistrationAndRegistration) {
  PeerProcess peer;
  ASSERT_TRUE(peer.Start(false));
  auto w = Words(peer.Command("DALLOC " + std::to_string(kAlloc)));
  ASSERT_EQ(w.size(), 3u);
  const uintptr_t remote = std::stoull(w[2]);
  auto a = Words(peer.Command("REG " + w[1] + " 0 " + std::to_string(kAlloc / 2)));
  auto b = Words(peer.Command("REG " + w[1] + " " + std::to_string(kAlloc / 2) + " " + std::to_string(kAlloc / 2)));
  ASSERT_EQ(a[0], "OK");
  ASSERT_EQ(b[0], "OK");
  hixl::Hixl ini;
  ASSERT_EQ(ini.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  uintptr_t dev = DeviceFilled(1 << 20, 9);
  Register(ini, dev, 1 << 20, hixl::MEM_DEVICE);
  ASSERT_EQ(ini.Connect(peer.name().c_str(), 5000), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> into_a = {{dev, remote + 4096, 1 << 20}};
  std::vector<hixl::TransferOpDesc> into_b = {{dev, remote + kAlloc / 2 + 4096, 1 << 20}};
  ASSERT_EQ(ini.TransferSync(peer.name().c_str(), hixl::WRITE, into_a, 5000), hixl::SUCCESS);
  // The peer's DeregisterMem returns after our mapping of it closed.
  ASSERT_EQ(peer.Command("DEREG " + a[1]), "OK");
  {
    QuietStderr quiet;
    EXPECT_NE(ini.TransferSync(peer.name().c_str(), hixl::WRITE, into_a, 5000), hixl::SUCCESS);
  }
  EXPECT_EQ(ini.TransferSync(peer.name().c_str(), hixl::WRITE, into_b, 5000), hixl::SUCCESS);
  ASSERT_EQ(Words(peer.Command("REG " + w[1] + " 0 " + std::to_string(kAlloc / 2)))[0], "OK");
  EXPECT_EQ(ini.TransferSync(peer.name().c_str(), hixl::WRITE, into_a, 5000), hixl::SUCCESS);
  EXPECT_EQ(std::stoull(Words(peer.Command("HASH " + w[1] + " 4096 " + std::to_string(1 << 20)))[1]),
            PatternHash(9, 0, 1 << 20));
  ini.Finalize();
  peer.Stop();
  gpu().Free(dev);
}

TEST_F(Gpu, APeerKilledMidCopyEndsTransfersInBoundedTime) {
  PeerProcess peer;
  ASSERT_TRUE(peer.Start(false));
  auto w = Words(peer.Command("DALLOC " + std::to_string(kAlloc)));
  ASSERT_EQ(w.size(), 3u);
  ASSERT_EQ(Words(peer.Command("REG " + w[1]))[0], "OK");
  const uintptr_t remote = std::stoull(w[2]);
  hixl::Hixl ini;
  ASSERT_EQ(ini.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  uintptr_t dev = DeviceFilled(kAlloc, 1);
  Register(ini, dev, kAlloc, hixl::MEM_DEVICE);
  ASSERT_EQ(ini.Connect(peer.name().c_str(), 5000), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> d;
  for (size_t off = 0; off < kAlloc; off += 1 << 20) d.push_back({dev + off, remote + off, 1 << 20});
  ASSERT_EQ(ini.TransferSync(peer.name().c_str(), hixl::WRITE, d, 10000), hixl::SUCCESS);
  QuietStderr quiet;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<hixl::TransferReq> reqs(8);
  for (auto &r : reqs) ASSERT_EQ(ini.TransferAsync(peer.name().c_str(), hixl::WRITE, d, {}, r), hixl::SUCCESS);
  peer.Kill(SIGKILL);
  // Every request ends (the copies into the dead peer's allocation finish
  // on the GPU or fail), none hangs; then the link is found dead.
  for (auto &r : reqs) {
    hixl::TransferStatus st = hixl::TransferStatus::WAITING;
    ASSERT_TRUE(WaitUntil([&] { return ini.GetTransferStatus(r, st) != hixl::SUCCESS ||
                                       st != hixl::TransferStatus::WAITING; }, 30));
  }
  EXPECT_TRUE(WaitUntil([&] { return ini.TransferSync(peer.name().c_str(), hixl::WRITE, d, 2000) != hixl::SUCCESS; },
                        30));
  EXPECT_LT(SecondsSince(t0), 60);
  ini.Finalize();
  gpu().Free(dev);
}

// A benchmark, not a test (run by scripts/gpu_check.sh with
// --gtest_also_run_disabled_tests): 1 MiB blocks, 256 MiB a run, median of
// 5 runs; prints GPU_BENCH lines.
double MedianGbps(std::vector<double> secs, size_t bytes) {
  std::sort(secs.begin(), secs.end());
  return bytes / secs[secs.size() / 2] / 1e9;
}

TEST_F(Gpu, DISABLED_Bench) {
  const size_t total = 256u << 20, block = 1u << 20;
  uintptr_t a = DeviceFilled(total, 1), b = gpu().Alloc(total);
  std::vector<double> t;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t off = 0; off < total; off += block) ASSERT_TRUE(gpu().DeviceToDevice(b + off, a + off, block));
    t.push_back(SecondsSince(t0));
  }
  const double dtod = MedianGbps(t, total);
  printf("GPU_BENCH cuMemcpyDtoD_in_process GB/s %.2f\n", dtod);
  auto run_path = [&](const char *protocol, bool device) {
    PeerProcess peer;
    EXPECT_TRUE(peer.Start(false));
    auto w = Words(peer.Command((device ? "DALLOC " : "ALLOC ") + std::to_string(total)));
    EXPECT_EQ(Words(peer.Command("REG " + w[1]))[0], "OK");
    const uintptr_t remote = std::stoull(w[2]);
    hixl::Hixl ini;
    std::map<hixl::AscendString, hixl::AscendString> opts = {
        {hixl::OPTION_GLOBAL_RESOURCE_CONFIG,
         (std::string(R"({"comm_resource_config.protocol_desc": [")") + protocol + "\"]}").c_str()}};
    EXPECT_EQ(ini.Initialize("127.0.0.1", opts), hixl::SUCCESS);
    LocalBuffer host(total);
    FillPattern(host.data(), total, 1);
    const uintptr_t local = device ? a : host.addr();
    Register(ini, local, total, device ? hixl::MEM_DEVICE : hixl::MEM_HOST);
    EXPECT_EQ(ini.Connect(peer.name().c_str(), 5000), hixl::SUCCESS);
    std::vector<hixl::TransferOpDesc> d;
    for (size_t off = 0; off < total; off += block) d.push_back({local + off, remote + off, block});
    std::vector<double> secs;
    for (int run = 0; run < 6; ++run) {  // the first warms up
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(ini.TransferSync(peer.name().c_str(), hixl::WRITE, d, 60000), hixl::SUCCESS);
      if (run > 0) secs.push_back(SecondsSince(t0));
    }
    ini.Finalize();
    peer.Stop();
    return MedianGbps(secs, total);
  };
  const double ipc = run_path("hccs:device", true);
  const double tcp_dev = run_path("tcp:host", true);
  const double tcp_host = run_path("tcp:host", false);
  printf("GPU_BENCH cuda_ipc_dev_to_dev_two_processes GB/s %.2f ratio_to_DtoD %.2f (goal >= 0.8)\n", ipc,
         ipc / dtod);
  printf("GPU_BENCH tcp_staged_dev_to_dev GB/s %.2f ratio_to_tcp_host %.2f (goal >= 0.8)\n", tcp_dev,
         tcp_dev / tcp_host);
  printf("GPU_BENCH tcp_host_to_host GB/s %.2f\n", tcp_host);
  gpu().Free(a);
  gpu().Free(b);
}

}  // namespace
}  // namespace hixl_test
