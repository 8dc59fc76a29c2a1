#include "ucx/ucx_harness.h"

#include <cstdlib>
#include <sstream>

#include "support/pattern.h"
#include "transport/ucx/ucx_loader.h"

namespace hixl_test {

const hixl_ucx_api_t *UcxApi(std::string *why) {
  static const hixl::ucx::PluginLoad load = hixl::ucx::LoadPluginFrom(HIXL_UCX_PLUGIN_PATH);
  if (why != nullptr) *why = load.why_not;
  return load.api;
}

UcxTransport TransportNamed(const std::string &name) {
  // Tests talk over loopback only.
  if (name == "tcp") return {"tcp", "lo"};
  return {name, ""};
}

std::vector<std::string> PeerEnv(const UcxTransport &t) {
  std::vector<std::string> env = {"HIXL_UCX_PLUGIN=" HIXL_UCX_PLUGIN_PATH, "UCX_TLS=" + t.tls};
  env.push_back("UCX_NET_DEVICES=" + (t.net_devices.empty() ? std::string("all") : t.net_devices));
  return env;
}

void ClearUcxEnvironment() {
  for (const char *v : {"UCX_TLS", "UCX_NET_DEVICES", "UCX_MM_ERROR_HANDLING", "UCX_KEEPALIVE_INTERVAL"}) unsetenv(v);
}

void BatchWait::OnDone(void *self, hixl_ucx_status_t status) {
  auto *w = static_cast<BatchWait *>(self);
  std::lock_guard<std::mutex> lock(w->mu_);
  ++w->calls_;
  w->status_ = status;
  w->cv_.notify_all();
}

bool BatchWait::Wait(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return calls_ > 0; });
}

bool BatchWait::done() {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_ > 0;
}

hixl_ucx_status_t BatchWait::status() {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

int BatchWait::calls() {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void ErrorWait::OnError(void *self, hixl_ucx_status_t, const char *) {
  auto *w = static_cast<ErrorWait *>(self);
  std::lock_guard<std::mutex> lock(w->mu_);
  ++w->calls_;
  w->cv_.notify_all();
}

bool ErrorWait::Wait(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return calls_ > 0; });
}

int ErrorWait::calls() {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

UcxContext::~UcxContext() { Destroy(); }

hixl_ucx_status_t UcxContext::Create(const UcxTransport &t, const std::vector<hixl_ucx_setting_t> &extra) {
  hixl_ucx_context_params_t p{};
  p.name = "hixl-test";
  p.tls = t.tls.c_str();
  p.net_devices = t.net_devices.empty() ? nullptr : t.net_devices.c_str();
  p.traffic_class = -1;
  p.service_level = -1;
  p.settings = extra.data();
  p.num_settings = extra.size();
  return UcxApi()->context_create(&p, &ctx_);
}

hixl_ucx_status_t UcxContext::Destroy() {
  if (ctx_ == nullptr) return HIXL_UCX_OK;
  hixl_ucx_status_t st = UcxApi()->context_destroy(ctx_);
  ctx_ = nullptr;
  return st;
}

bool UcxPeer::Start(const UcxTransport &t) {
  proc_.env = PeerEnv(t);
  if (!proc_.Start()) return false;
  auto w = Words(proc_.Command("ADDR"));
  if (w.size() != 2 || w[0] != "OK") return false;
  address = FromHex(w[1]);
  return !address.empty();
}

long UcxPeer::AllocRegistered(size_t len, uintptr_t *addr, std::vector<uint8_t> *packed_rkey, bool read_only) {
  auto a = Words(proc_.Command("ALLOC " + std::to_string(len)));
  if (a.size() != 3 || a[0] != "OK") return -1;
  auto r = Words(proc_.Command("REG " + a[1] + (read_only ? " ro" : "")));
  if (r.size() != 2 || r[0] != "OK") return -1;
  *addr = std::stoull(a[2]);
  *packed_rkey = FromHex(r[1]);
  return std::stol(a[1]);
}

Buffer::Buffer(size_t len, size_t misalign) : bytes_(len + misalign + 8192, 0), len_(len) {
  auto base = reinterpret_cast<uintptr_t>(bytes_.data());
  misalign_ = (4096 - base % 4096) % 4096 + misalign;
}

void UcxPairTest::SetUp() {
  std::string why;
  api_ = UcxApi(&why);
  ASSERT_NE(api_, nullptr) << why;
  ClearUcxEnvironment();
  transport_ = TransportNamed(GetParam());
  ASSERT_EQ(ctx_.Create(transport_, ExtraSettings()), HIXL_UCX_OK);
  StartPeerAndConnect();
}

void UcxPairTest::StartPeerAndConnect() {
  ASSERT_TRUE(peer_.Start(transport_)) << "the peer did not start";
  ep_ = nullptr;
  ASSERT_EQ(api_->ep_create(ctx_.get(), peer_.address.data(), peer_.address.size(), ErrorWait::OnError, &ep_errors_,
                            &ep_),
            HIXL_UCX_OK);
}

void UcxPairTest::TearDown() {
  if (ep_ != nullptr) api_->ep_destroy(ep_, 0);
  ep_ = nullptr;
  EXPECT_EQ(ctx_.Destroy(), HIXL_UCX_OK);
  peer_.process().Stop();
}

hixl_ucx_rkey_t *UcxPairTest::Unpack(const std::vector<uint8_t> &packed, hixl_ucx_ep_t *ep) {
  hixl_ucx_rkey_t *rkey = nullptr;
  EXPECT_EQ(api_->rkey_unpack(ep != nullptr ? ep : ep_, packed.data(), packed.size(), &rkey), HIXL_UCX_OK);
  return rkey;
}

UcxPairTest::PeerRegion UcxPairTest::Region(size_t len, bool read_only) {
  uintptr_t addr = 0;
  std::vector<uint8_t> packed;
  long id = peer_.AllocRegistered(len, &addr, &packed, read_only);
  return {id, addr, id >= 0 ? Unpack(packed) : nullptr};
}

hixl_ucx_status_t UcxPairTest::Run(hixl_ucx_op_t op, const std::vector<hixl_ucx_piece_t> &pieces, int timeout_ms) {
  BatchWait wait;
  hixl_ucx_status_t st = api_->batch_post(ep_, op, pieces.data(), pieces.size(), BatchWait::OnDone, &wait);
  if (st != HIXL_UCX_OK) return st;
  if (!wait.Wait(timeout_ms)) {
    ADD_FAILURE() << "a batch of " << pieces.size() << " pieces was not done in " << timeout_ms << " ms";
    api_->ep_destroy(ep_, 0);  // its callback has run when this returns
    ep_ = nullptr;
  }
  EXPECT_EQ(wait.calls(), 1);
  return wait.status();
}

BatchWait &UcxPairTest::PostWrite(const PeerRegion &r, Buffer &src, uint64_t seed) {
  FillPattern(src.data(), src.size(), seed);
  hixl_ucx_piece_t piece{src.addr(), r.addr, src.size(), r.rkey};
  BatchWait &wait = NewWait();
  EXPECT_EQ(api_->batch_post(ep_, HIXL_UCX_OP_PUT, &piece, 1, BatchWait::OnDone, &wait), HIXL_UCX_OK);
  return wait;
}

hixl_ucx_ep_stats_t UcxPairTest::Stats() {
  hixl_ucx_ep_stats_t s{};
  EXPECT_EQ(api_->ep_stats(ep_, &s), HIXL_UCX_OK);
  return s;
}

}  // namespace hixl_test
