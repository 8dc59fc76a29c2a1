// errors_test.cc: every error code of the implemented calls.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "integration/fixture.h"
#include "integration/net_util.h"

namespace hixl_test {
namespace {

using hixl::AscendString;
using Options = std::map<AscendString, AscendString>;

// A port that nothing listens on (bound, closed).
std::string ClosedPortName() {
  SilentListener p(false);
  return p.name();
}

// A server and a client engine in this process.
class LocalPair : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 20; ++i) {
      server_name_ = ClosedPortName();
      if (server_.Initialize(server_name_.c_str(), {}) == hixl::SUCCESS) break;
    }
    ASSERT_EQ(client_.Initialize("127.0.0.1", ClientOptions()), hixl::SUCCESS);
    remote_buf_ = std::make_unique<LocalBuffer>(1 << 20);
    hixl::MemDesc d{};
    d.addr = remote_buf_->addr();
    d.len = remote_buf_->size();
    ASSERT_EQ(server_.RegisterMem(d, hixl::MEM_HOST, remote_handle_), hixl::SUCCESS);
  }
  void TearDown() override {
    client_.Finalize();
    server_.Finalize();
  }
  virtual Options ClientOptions() { return {}; }

  hixl::Hixl server_;
  hixl::Hixl client_;
  std::string server_name_;
  std::unique_ptr<LocalBuffer> remote_buf_;
  hixl::MemHandle remote_handle_ = nullptr;
};

TEST(BeforeInitialize, EveryCallFails) {
  hixl::Hixl e;
  hixl::MemDesc d{};
  d.addr = 0x1000;
  d.len = 1;
  hixl::MemHandle h;
  EXPECT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h), hixl::FAILED);
  EXPECT_EQ(e.DeregisterMem(reinterpret_cast<hixl::MemHandle>(1)), hixl::FAILED);
  EXPECT_EQ(e.Connect("127.0.0.1:1"), hixl::FAILED);
  EXPECT_EQ(e.Disconnect("127.0.0.1:1"), hixl::FAILED);
  EXPECT_EQ(e.TransferSync("127.0.0.1:1", hixl::READ, {}), hixl::FAILED);
  EXPECT_EQ(e.SendNotify("127.0.0.1:1", hixl::NotifyDesc{}), hixl::FAILED);
  std::vector<hixl::NotifyDesc> n;
  EXPECT_EQ(e.GetNotifies(n), hixl::FAILED);
  hixl::TransferReq req = nullptr;
  EXPECT_EQ(e.TransferAsync("127.0.0.1:1", hixl::READ, {}, hixl::TransferArgs{}, req), hixl::FAILED);
  hixl::TransferStatus ts;
  EXPECT_EQ(e.GetTransferStatus(req, ts), hixl::FAILED);
  EXPECT_EQ(e.ConnectAsync("127.0.0.1:1"), hixl::FAILED);
  hixl::AsyncConnectStatus cs;
  EXPECT_EQ(e.GetAsyncConnectStatus("127.0.0.1:1", cs), hixl::FAILED);
  e.Finalize();  // safe without Initialize
  e.Finalize();
}

TEST(Initialize, MalformedAddressesArePARAM_INVALID) {
  for (const char *bad : {"", "localhost:5000", "1.2.3.4:65536", "1.2.3.4:x", "::1", "[::1", "1.2.3:80",
                          "127.0.0.1:-1", "[::1]:99999"}) {
    hixl::Hixl e;
    EXPECT_EQ(e.Initialize(bad, {}), hixl::PARAM_INVALID) << "'" << bad << "'";
  }
}

TEST(Initialize, AddressInUseOrNotLocalIsFAILED) {
  SilentListener busy;
  hixl::Hixl e;
  EXPECT_EQ(e.Initialize(busy.name().c_str(), {}), hixl::FAILED);
  hixl::Hixl f;
  EXPECT_EQ(f.Initialize("192.0.2.1:5000", {}), hixl::FAILED);  // TEST-NET-1: never local
  hixl::Hixl g;
  EXPECT_EQ(g.Initialize("192.0.2.1", {}), hixl::FAILED);
}

TEST(Initialize, SecondInitializeIsFAILEDAndFinalizeAllowsAnother) {
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  EXPECT_EQ(e.Initialize("127.0.0.1", {}), hixl::FAILED);
  e.Finalize();
  EXPECT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  e.Finalize();
}

TEST(Initialize, OptionsAreValidated) {
  struct Case {
    const char *key;
    const char *value;
    hixl::Status want;
  } cases[] = {
      {hixl::OPTION_BUFFER_POOL, "4:8", hixl::SUCCESS},
      {hixl::OPTION_BUFFER_POOL, "0:0", hixl::SUCCESS},
      {hixl::OPTION_BUFFER_POOL, "4", hixl::PARAM_INVALID},
      {hixl::OPTION_AUTO_CONNECT, "2", hixl::PARAM_INVALID},
      {hixl::OPTION_RDMA_TRAFFIC_CLASS, "132", hixl::SUCCESS},
      {hixl::OPTION_RDMA_TRAFFIC_CLASS, "133", hixl::PARAM_INVALID},
      {hixl::OPTION_RDMA_SERVICE_LEVEL, "8", hixl::PARAM_INVALID},
      {hixl::OPTION_ENABLE_USE_FABRIC_MEM, "1", hixl::UNSUPPORTED},
      {hixl::OPTION_ENABLE_USE_FABRIC_MEM, "0", hixl::SUCCESS},
      {hixl::OPTION_GLOBAL_RESOURCE_CONFIG, "{\"connect_pool.thread_num\": 65}", hixl::PARAM_INVALID},
      {hixl::OPTION_GLOBAL_RESOURCE_CONFIG, "not json", hixl::PARAM_INVALID},
      {hixl::OPTION_GLOBAL_RESOURCE_CONFIG, "{\"channel_pool.max_channel\": \"16\"}", hixl::SUCCESS},
      {hixl::OPTION_LOCAL_COMM_RES, "", hixl::SUCCESS},
      {"SomeUnknownKey", "whatever", hixl::SUCCESS},
  };
  for (const auto &c : cases) {
    hixl::Hixl e;
    Options o;
    o[c.key] = c.value;
    EXPECT_EQ(e.Initialize("127.0.0.1", o), c.want) << c.key << "=" << c.value;
  }
}

TEST(RegisterMem, ArgumentErrors) {
  hixl::Hixl e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), hixl::SUCCESS);
  LocalBuffer b(4096);
  hixl::MemHandle h = nullptr;
  hixl::MemDesc d{};
  d.addr = 0;
  d.len = 16;
  EXPECT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h), hixl::PARAM_INVALID);
  d.addr = b.addr();
  d.len = 0;
  EXPECT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h), hixl::PARAM_INVALID);
  d.len = b.size();
  EXPECT_EQ(e.RegisterMem(d, static_cast<hixl::MemType>(7), h), hixl::PARAM_INVALID);
  EXPECT_EQ(e.RegisterMem(d, hixl::MEM_DEVICE, h), hixl::UNSUPPORTED);
  hixl::MemHandle h1 = nullptr, h2 = nullptr;
  ASSERT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h1), hixl::SUCCESS);
  ASSERT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h2), hixl::SUCCESS);
  EXPECT_EQ(h1, h2);
  // Overlapping, different regions are fine.
  d.len = 100;
  ASSERT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h2), hixl::SUCCESS);
  EXPECT_NE(h1, h2);
  EXPECT_EQ(e.DeregisterMem(nullptr), hixl::PARAM_INVALID);
  EXPECT_EQ(e.DeregisterMem(h1), hixl::SUCCESS);
  EXPECT_EQ(e.DeregisterMem(h1), hixl::SUCCESS);  // again: no effect
  EXPECT_EQ(e.DeregisterMem(reinterpret_cast<hixl::MemHandle>(0xdead)), hixl::SUCCESS);
}

TEST(RegisterMem, CapIsRESOURCE_EXHAUSTEDAndOneTiBIsInstant) {
  hixl::Hixl e;
  Options o;
  o[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = "{\"max_regions\": 256}";
  ASSERT_EQ(e.Initialize("127.0.0.1", o), hixl::SUCCESS);
  // 1 TiB of address space that no page backs.
  const size_t tib = 1ull << 40;
  void *p = mmap(nullptr, tib, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    // ThreadSanitizer keeps most of the address space for its shadow memory.
    e.Finalize();
    GTEST_SKIP() << "cannot reserve 1 TiB of address space here: " << std::strerror(errno);
  }
  hixl::MemDesc d{};
  d.addr = reinterpret_cast<uintptr_t>(p);
  d.len = tib;
  hixl::MemHandle h = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h), hixl::SUCCESS);
  EXPECT_LT(SecondsSince(t0), 0.1);
  for (size_t i = 1; i < 256; ++i) {
    d.len = i;
    ASSERT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h), hixl::SUCCESS) << i;
  }
  d.len = 256;
  EXPECT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h), hixl::RESOURCE_EXHAUSTED);
  e.Finalize();
  munmap(p, tib);
}

TEST(GetCapability, Values) {
  int32_t v = -5;
  EXPECT_EQ(hixl::Hixl::GetCapability(static_cast<hixl::FeatureType>(-1), v), hixl::PARAM_INVALID);
  EXPECT_EQ(hixl::Hixl::GetCapability(static_cast<hixl::FeatureType>(99), v), hixl::SUCCESS);
  EXPECT_EQ(v, hixl::FEATURE_NOT_SUPPORTED);
  EXPECT_EQ(hixl::Hixl::GetCapability(hixl::CLIENT_SERVER_COMM, v), hixl::SUCCESS);
  EXPECT_EQ(v, hixl::FEATURE_SUPPORTED);
  EXPECT_EQ(hixl::Hixl::GetCapability(hixl::AUTO_CONNECT, v), hixl::SUCCESS);
  EXPECT_TRUE(v == hixl::FEATURE_SUPPORTED || v == hixl::FEATURE_NOT_SUPPORTED);
}

TEST_F(LocalPair, ConnectErrors) {
  EXPECT_EQ(client_.Connect("127.0.0.1", 1000), hixl::PARAM_INVALID);    // no port
  EXPECT_EQ(client_.Connect("127.0.0.1:0", 1000), hixl::PARAM_INVALID);  // not a server
  EXPECT_EQ(client_.Connect("bogus:1", 1000), hixl::PARAM_INVALID);
  EXPECT_EQ(client_.Connect(server_name_.c_str(), 0), hixl::PARAM_INVALID);
  EXPECT_EQ(client_.Connect(server_name_.c_str(), -5), hixl::PARAM_INVALID);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(client_.Connect(ClosedPortName().c_str(), 1000), hixl::FAILED);  // refused
  EXPECT_LT(SecondsSince(t0), 1.0);
  ASSERT_EQ(client_.Connect(server_name_.c_str(), 1000), hixl::SUCCESS);
  EXPECT_EQ(client_.Connect(server_name_.c_str(), 1000), hixl::ALREADY_CONNECTED);
}

TEST_F(LocalPair, DisconnectErrors) {
  EXPECT_EQ(client_.Disconnect(server_name_.c_str(), 1000), hixl::NOT_CONNECTED);
  EXPECT_EQ(client_.Disconnect("nonsense", 1000), hixl::PARAM_INVALID);
  ASSERT_EQ(client_.Connect(server_name_.c_str(), 1000), hixl::SUCCESS);
  EXPECT_EQ(client_.Disconnect(server_name_.c_str(), 0), hixl::PARAM_INVALID);
  EXPECT_EQ(client_.Disconnect(server_name_.c_str(), 1000), hixl::SUCCESS);
  EXPECT_EQ(client_.Disconnect(server_name_.c_str(), 1000), hixl::NOT_CONNECTED);
  // Connect again after Disconnect works.
  EXPECT_EQ(client_.Connect(server_name_.c_str(), 1000), hixl::SUCCESS);
}

TEST_F(LocalPair, TransferSyncErrors) {
  LocalBuffer local(1 << 20);
  hixl::MemDesc d{};
  d.addr = local.addr();
  d.len = local.size();
  hixl::MemHandle h;
  ASSERT_EQ(client_.RegisterMem(d, hixl::MEM_HOST, h), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> ok{{local.addr(), remote_buf_->addr(), 4096}};
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, ok, 1000), hixl::NOT_CONNECTED);
  ASSERT_EQ(client_.Connect(server_name_.c_str(), 1000), hixl::SUCCESS);
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, ok, 0), hixl::PARAM_INVALID);
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, ok, -1), hixl::PARAM_INVALID);
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), static_cast<hixl::TransferOp>(9), ok, 1000),
            hixl::PARAM_INVALID);
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, {}, 1000), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> zero{{local.addr(), remote_buf_->addr(), 0}};
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, zero, 1000), hixl::PARAM_INVALID);
  std::vector<hixl::TransferOpDesc> wrap{{local.addr(), UINTPTR_MAX - 10, 100}};
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::READ, wrap, 1000), hixl::PARAM_INVALID);
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, ok, 1000), hixl::SUCCESS);
  // With the buffer pool on (the default) unregistered host memory is fine.
  std::vector<uint8_t> unregistered(4096, 0xab);
  std::vector<hixl::TransferOpDesc> unreg{{reinterpret_cast<uintptr_t>(unregistered.data()), remote_buf_->addr(),
                                           unregistered.size()}};
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, unreg, 1000), hixl::SUCCESS);
  EXPECT_EQ(remote_buf_->data()[100], 0xab);
}

class LocalPairPoolOff : public LocalPair {
  Options ClientOptions() override { return {{hixl::OPTION_BUFFER_POOL, "0:0"}}; }
};

TEST_F(LocalPairPoolOff, UnregisteredLocalMemoryIsPARAM_INVALID) {
  ASSERT_EQ(client_.Connect(server_name_.c_str(), 1000), hixl::SUCCESS);
  std::vector<uint8_t> unregistered(4096, 0xcd);
  std::vector<hixl::TransferOpDesc> unreg{{reinterpret_cast<uintptr_t>(unregistered.data()), remote_buf_->addr(),
                                           unregistered.size()}};
  EXPECT_EQ(client_.TransferSync(server_name_.c_str(), hixl::WRITE, unreg, 1000), hixl::PARAM_INVALID);
  EXPECT_NE(remote_buf_->data()[100], 0xcd);
}

TEST_F(LocalPair, SendNotifyErrors) {
  hixl::NotifyDesc n;
  n.name = "n";
  n.notify_msg = "m";
  EXPECT_EQ(client_.SendNotify(server_name_.c_str(), n, 1000), hixl::NOT_CONNECTED);
  ASSERT_EQ(client_.Connect(server_name_.c_str(), 1000), hixl::SUCCESS);
  EXPECT_EQ(client_.SendNotify(server_name_.c_str(), n, 0), hixl::PARAM_INVALID);
  std::string big(1025, 'x');
  hixl::NotifyDesc long_name{AscendString(big.c_str()), AscendString("m")};
  hixl::NotifyDesc long_msg{AscendString("n"), AscendString(big.c_str())};
  EXPECT_EQ(client_.SendNotify(server_name_.c_str(), long_name, 1000), hixl::PARAM_INVALID);
  EXPECT_EQ(client_.SendNotify(server_name_.c_str(), long_msg, 1000), hixl::PARAM_INVALID);
  std::string max(1024, 'y');
  hixl::NotifyDesc at_max{AscendString(max.c_str()), AscendString(max.c_str())};
  EXPECT_EQ(client_.SendNotify(server_name_.c_str(), at_max, 1000), hixl::SUCCESS);
}

}  // namespace
}  // namespace hixl_test
