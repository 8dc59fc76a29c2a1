// The UCX plug-in's settings: hixl's values reach UCX, a user's own UCX_*
// environment wins over them, bad values are refused; and its answer to
// "is there an RDMA device here".
#include <dirent.h>

#include <cstdlib>
#include <string>

#include "ucx/ucx_harness.h"

namespace hixl_test {
namespace {

class UcxSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    api_ = UcxApi(&why);
    ASSERT_NE(api_, nullptr) << why;
    ClearUcxEnvironment();
  }
  void TearDown() override { ClearUcxEnvironment(); }

  hixl_ucx_status_t Create(hixl_ucx_context_params_t p) {
    hixl_ucx_context_t *ctx = nullptr;
    hixl_ucx_status_t st = api_->context_create(&p, &ctx);
    if (st == HIXL_UCX_OK) {
      EXPECT_EQ(api_->context_destroy(ctx), HIXL_UCX_OK);
    }
    return st;
  }
  static hixl_ucx_context_params_t Params() {
    hixl_ucx_context_params_t p{};
    p.tls = "tcp";
    p.net_devices = "lo";
    p.traffic_class = -1;
    p.service_level = -1;
    return p;
  }

  const hixl_ucx_api_t *api_ = nullptr;
};

TEST_F(UcxSettings, TrafficClassAndServiceLevelOutOfRangeAreRefused) {
  hixl_ucx_context_params_t p = Params();
  p.traffic_class = 256;
  EXPECT_EQ(Create(p), HIXL_UCX_ERR_INVALID);
  p = Params();
  p.service_level = 16;
  EXPECT_EQ(Create(p), HIXL_UCX_ERR_INVALID);
  // In range (HIXL's defaults): accepted here, where no transport reads them.
  p = Params();
  p.traffic_class = 132;
  p.service_level = 4;
  EXPECT_EQ(Create(p), HIXL_UCX_OK);
}

TEST_F(UcxSettings, AValueUcxRefusesFailsTheContext) {
  hixl_ucx_setting_t bad[] = {{"RNDV_THRESH", "banana"}};
  hixl_ucx_context_params_t p = Params();
  p.settings = bad;
  p.num_settings = 1;
  EXPECT_EQ(Create(p), HIXL_UCX_ERR_INVALID);
  hixl_ucx_setting_t nameless[] = {{"UCX_", "1"}};
  p.settings = nameless;
  EXPECT_EQ(Create(p), HIXL_UCX_ERR_INVALID);
}

TEST_F(UcxSettings, TheUsersOwnUcxEnvironmentWins) {
  // hixl asks for shared memory; the user's UCX_TLS says tcp: a peer that
  // speaks only tcp is reached, over tcp.
  UcxPeer peer;
  ASSERT_TRUE(peer.Start(TransportNamed("tcp")));
  setenv("UCX_TLS", "tcp", 1);
  setenv("UCX_NET_DEVICES", "lo", 1);
  UcxContext ctx;
  ASSERT_EQ(ctx.Create(TransportNamed("sm")), HIXL_UCX_OK);
  hixl_ucx_ep_t *ep = nullptr;
  ASSERT_EQ(api_->ep_create(ctx.get(), peer.address.data(), peer.address.size(), nullptr, nullptr, &ep), HIXL_UCX_OK);
  char text[256];
  ASSERT_EQ(api_->ep_describe(ep, text, sizeof(text)), HIXL_UCX_OK);
  EXPECT_NE(std::string(text).find("tcp"), std::string::npos) << text;
  EXPECT_EQ(api_->ep_destroy(ep, 1000), HIXL_UCX_OK);
  EXPECT_EQ(ctx.Destroy(), HIXL_UCX_OK);
  peer.process().Stop();
}

size_t SysfsRdmaDevices() {
  DIR *d = opendir("/sys/class/infiniband");
  if (d == nullptr) return 0;
  size_t n = 0;
  while (dirent *e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

TEST_F(UcxSettings, RdmaDevicesAreThoseTheKernelHas) {
  char names[512];
  size_t count = 99;
  ASSERT_EQ(api_->rdma_devices(names, sizeof(names), &count), HIXL_UCX_OK);
  // Each kernel RDMA device shows once per port in UCX ("mlx5_0:1").
  if (SysfsRdmaDevices() == 0) {
    EXPECT_EQ(count, 0u) << names;
    EXPECT_STREQ(names, "");
  } else {
    EXPECT_GE(count, SysfsRdmaDevices()) << names;
  }
  EXPECT_EQ(api_->rdma_devices(nullptr, 0, nullptr), HIXL_UCX_ERR_INVALID);
}

}  // namespace
}  // namespace hixl_test
