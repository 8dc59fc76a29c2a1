// fixture.h: an initiator engine in the test process and a target engine in
// a hixl_test_peer process, connected over 127.0.0.1 or ::1.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hixl/hixl.h"
#include "support/loopback_transport/loopback_transport.h"
#include "support/pattern.h"
#include "support/peer_process.h"

namespace hixl_test {

// Anonymous memory, unmapped on destruction.
class LocalBuffer {
 public:
  explicit LocalBuffer(size_t len) : len_(len) {
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
  }
  ~LocalBuffer() {
    if (p_ != nullptr) munmap(p_, len_);
  }
  LocalBuffer(const LocalBuffer &) = delete;
  LocalBuffer &operator=(const LocalBuffer &) = delete;
  uint8_t *data() const { return p_; }
  uintptr_t addr() const { return reinterpret_cast<uintptr_t>(p_); }
  size_t size() const { return len_; }

 private:
  uint8_t *p_;
  size_t len_;
};

// Sends this process's stderr to /dev/null while alive (tests whose threads
// log on every call).
class QuietStderr {
 public:
  QuietStderr() : saved_(dup(2)) {
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, 2);
      close(null);
    }
  }
  ~QuietStderr() {
    if (saved_ >= 0) {
      dup2(saved_, 2);
      close(saved_);
    }
  }
  QuietStderr(const QuietStderr &) = delete;
  QuietStderr &operator=(const QuietStderr &) = delete;

 private:
  int saved_;
};

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Polls `cond` every millisecond until it holds or `seconds` pass; its last
// answer. For waiting on an event a test can observe, never for ordering by
// hoping that some time is enough.
template <typename Cond>
bool WaitUntil(Cond cond, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!cond()) {
    if (SecondsSince(t0) >= seconds) return cond();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Initializes `target` as a server on a free 127.0.0.1 port, with
// `options`; its name in *me.
inline bool ServeOnFreePort(hixl::Hixl &target, std::string *me,
                            const std::map<hixl::AscendString, hixl::AscendString> &options = {}) {
  for (int p = 42000 + getpid() % 4000, i = 0; i < 50 && me->empty(); ++i, ++p) {
    if (target.Initialize(("127.0.0.1:" + std::to_string(p)).c_str(), options) == hixl::SUCCESS) {
      *me = "127.0.0.1:" + std::to_string(p);
    }
  }
  return !me->empty();
}

// How the test's initiator reaches the peer: over 127.0.0.1 or ::1, with
// its data on TCP streams or on shm (direct copies: the peer is on this host).
struct Net {
  bool v6;
  const char *transport;  // "tcp", "shm", "ucx", or the test-only "loopback"
  // ucx: the UCX transports it runs on here, "tcp" (loopback) or "sm"
  // (both sides use them: ucx.tls).
  const char *ucx_tls = nullptr;
};

inline void PrintTo(const Net &n, std::ostream *os) {
  *os << (n.v6 ? "IPv6/" : "IPv4/") << n.transport << (n.ucx_tls != nullptr ? "/" : "")
      << (n.ucx_tls != nullptr ? n.ucx_tls : "");
}

inline std::string NetName(const ::testing::TestParamInfo<Net> &info) {
  return std::string(info.param.v6 ? "IPv6" : "IPv4") + "_" + info.param.transport +
         (info.param.ucx_tls != nullptr ? std::string("_") + info.param.ucx_tls : "");
}

// Every transport, and the TCP ones only (for tests that freeze the peer:
// shm copies do not need the peer's CPU, so a frozen peer still completes).
inline auto AllNets() { return ::testing::Values(Net{false, "tcp"}, Net{true, "tcp"}, Net{false, "shm"}); }
inline auto TcpNets() { return ::testing::Values(Net{false, "tcp"}, Net{true, "tcp"}); }
// The ucx transport over UCX's tcp and shared memory (this machine has no
// RDMA); instantiated only where the UCX plug-in is built (HIXL_TEST_UCX).
// Their test names contain "ucx": ctest labels them ucx.
inline auto UcxNets() { return ::testing::Values(Net{false, "ucx", "tcp"}, Net{false, "ucx", "sm"}); }

// `options` with GlobalResourceConfig's protocol_desc set to `transport`
// only (merged into a GlobalResourceConfig already there), so that a test
// never silently runs on another transport.
std::map<hixl::AscendString, hixl::AscendString> WithTransport(std::map<hixl::AscendString, hixl::AscendString> options,
                                                               const std::string &transport);
// The same for `net`, with its UCX settings (ucx.tls, ucx.net_devices).
std::map<hixl::AscendString, hixl::AscendString> WithNet(std::map<hixl::AscendString, hixl::AscendString> options,
                                                         const Net &net);
// A peer's GlobalResourceConfig JSON (or "") with what `net` needs of a
// target: for ucx, protocol_desc naming it (a target without an RDMA device
// runs ucx only when asked to) and its UCX settings.
std::string PeerConfigFor(const std::string &json, const Net &net);

// `base` with GlobalResourceConfig set to `json`.
inline std::map<hixl::AscendString, hixl::AscendString> ResourceConfig(
    const std::string &json, std::map<hixl::AscendString, hixl::AscendString> base = {}) {
  base[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = json.c_str();
  return base;
}

// Polls `req` until it is no longer WAITING or `seconds` pass.
inline hixl::TransferStatus WaitFor(hixl::Hixl &e, hixl::TransferReq req, double seconds, double *took = nullptr) {
  auto t0 = std::chrono::steady_clock::now();
  hixl::TransferStatus st = hixl::TransferStatus::WAITING;
  while (SecondsSince(t0) < seconds) {
    if (e.GetTransferStatus(req, st) != hixl::SUCCESS) return hixl::TransferStatus::FAILED;
    if (st != hixl::TransferStatus::WAITING) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (took != nullptr) *took = SecondsSince(t0);
  return st;
}

// Registers `b` with `e` (host memory); EXPECTs success.
inline hixl::MemHandle RegisterWith(hixl::Hixl &e, const LocalBuffer &b) {
  hixl::MemDesc d{};
  d.addr = b.addr();
  d.len = b.size();
  hixl::MemHandle h = nullptr;
  EXPECT_EQ(e.RegisterMem(d, hixl::MEM_HOST, h), hixl::SUCCESS);
  return h;
}

class PeerTest : public ::testing::TestWithParam<Net> {
 protected:
  void SetUp() override { StartAll(""); }
  void TearDown() override {
    engine_.Finalize();
    peer_.Stop();
  }

  void StartAll(const std::string &peer_config, const std::map<hixl::AscendString, hixl::AscendString> &opts = {}) {
    if (std::string(GetParam().transport) == "loopback") RegisterLoopbackTransport();
    ASSERT_TRUE(peer_.Start(GetParam().v6, PeerConfigFor(peer_config, GetParam())));
    remote_ = peer_.name();
    ASSERT_EQ(engine_.Initialize(GetParam().v6 ? "[::1]" : "127.0.0.1", WithNet(opts, GetParam())), hixl::SUCCESS);
  }

  hixl::MemHandle RegisterLocal(const LocalBuffer &b) { return RegisterWith(engine_, b); }

  // Connects, and checks that the link uses the transport under test.
  hixl::Status Connect(int timeout_ms = 3000) {
    hixl::Status s = engine_.Connect(remote_.c_str(), timeout_ms);
    hixl::AscendString transport;
    if (s == hixl::SUCCESS && engine_.GetLinkTransport(remote_.c_str(), transport) == hixl::SUCCESS) {
      EXPECT_STREQ(transport.GetString(), GetParam().transport) << "the link chose another transport";
    }
    return s;
  }

  hixl::Status Transfer(hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &descs, int timeout_ms = 30000) {
    return engine_.TransferSync(remote_.c_str(), op, descs, timeout_ms);
  }

  hixl::Hixl engine_;
  PeerProcess peer_;
  std::string remote_;
};


}  // namespace hixl_test
