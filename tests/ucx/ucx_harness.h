// ucx_harness.h: what the UCX plug-in tests share: the plug-in, hex for
// addresses and keys on the peer's command lines, a context and an
// endpoint that clean up after themselves, and a batch waited for with a
// deadline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/peer_process.h"
#include "transport/ucx/ucx_plugin_api.h"

namespace hixl_test {

// The plug-in built with the tests (null, with *why, when it did not load).
const hixl_ucx_api_t *UcxApi(std::string *why = nullptr);

// The UCX settings of a transport under test: "tcp" (loopback only) or "sm".
struct UcxTransport {
  std::string tls;
  std::string net_devices;  // empty: UCX's default
};
UcxTransport TransportNamed(const std::string &name);
// The environment a peer process runs with for `t`.
std::vector<std::string> PeerEnv(const UcxTransport &t);
// Removes the UCX_* variables that would override the tests' own settings
// (a user's environment wins in the plug-in). Call with no context alive.
void ClearUcxEnvironment();

// A batch's callback, waited for with a deadline.
class BatchWait {
 public:
  static void OnDone(void *self, hixl_ucx_status_t status);
  // True when the callback ran within timeout_ms.
  bool Wait(int timeout_ms);
  bool done();
  hixl_ucx_status_t status();
  int calls();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;                          // guarded by mu_
  hixl_ucx_status_t status_ = HIXL_UCX_OK;  // guarded by mu_
};

// An endpoint's error callback, waited for with a deadline.
class ErrorWait {
 public:
  static void OnError(void *self, hixl_ucx_status_t status, const char *why);
  bool Wait(int timeout_ms);
  int calls();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;  // guarded by mu_
};

// A context of the plug-in, destroyed with the object.
class UcxContext {
 public:
  UcxContext() = default;
  ~UcxContext();
  UcxContext(const UcxContext &) = delete;
  UcxContext &operator=(const UcxContext &) = delete;
  hixl_ucx_status_t Create(const UcxTransport &t, const std::vector<hixl_ucx_setting_t> &extra = {});
  hixl_ucx_status_t Destroy();
  hixl_ucx_context_t *get() const { return ctx_; }

 private:
  hixl_ucx_context_t *ctx_ = nullptr;
};

// A peer process (ucx_test_peer) and what the test side knows of it.
class UcxPeer {
 public:
  bool Start(const UcxTransport &t);
  PeerProcess &process() { return proc_; }
  std::vector<uint8_t> address;
  // Allocates and registers len bytes there (read_only: for remote reads
  // only); returns the id, or -1.
  long AllocRegistered(size_t len, uintptr_t *addr, std::vector<uint8_t> *packed_rkey, bool read_only = false);

 private:
  PeerProcess proc_;
};

// A byte buffer whose first byte sits `misalign` bytes past a page.
class Buffer {
 public:
  Buffer(size_t len, size_t misalign = 0);
  uint8_t *data() { return bytes_.data() + misalign_; }
  uint64_t addr() { return reinterpret_cast<uint64_t>(data()); }
  size_t size() const { return len_; }

 private:
  std::vector<uint8_t> bytes_;
  size_t misalign_;
  size_t len_;
};

}  // namespace hixl_test

namespace hixl_test {

// A test with a peer process (the target) and an endpoint to it from a
// context of this process, over the transport named by the parameter.
class UcxPairTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Starts a peer (again) and connects a new endpoint to it.
  void StartPeerAndConnect();
  // Settings of this side's context beyond the transport's.
  virtual std::vector<hixl_ucx_setting_t> ExtraSettings() const { return {}; }
  hixl_ucx_rkey_t *Unpack(const std::vector<uint8_t> &packed, hixl_ucx_ep_t *ep = nullptr);
  // Allocates and registers len bytes at the peer, and unpacks the key on
  // ep_ (id -1 when that failed).
  struct PeerRegion {
    long id;
    uint64_t addr;
    hixl_ucx_rkey_t *rkey;
  };
  PeerRegion Region(size_t len, bool read_only = false);
  // Runs a batch on ep_ and returns its callback's status; a batch that is
  // not done within timeout_ms fails the test and is cut (ep_destroy).
  hixl_ucx_status_t Run(hixl_ucx_op_t op, const std::vector<hixl_ucx_piece_t> &pieces, int timeout_ms = 60000);
  hixl_ucx_ep_stats_t Stats();
  // A wait owned by the fixture: a callback may come after a failed
  // assertion returned from the test body (TearDown cuts the batch).
  BatchWait &NewWait() { return waits_.emplace_back(); }
  // Fills `src` with `seed`'s pattern and posts it as one WRITE to the
  // start of `r`; the returned wait hears its callback.
  BatchWait &PostWrite(const PeerRegion &r, Buffer &src, uint64_t seed);

  const hixl_ucx_api_t *api_ = nullptr;
  UcxTransport transport_;
  UcxPeer peer_;
  UcxContext ctx_;
  hixl_ucx_ep_t *ep_ = nullptr;
  ErrorWait ep_errors_;
  std::deque<BatchWait> waits_;
};

}  // namespace hixl_test
