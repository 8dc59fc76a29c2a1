/*
 * hixl.h: class hixl::Hixl, the one-sided transfer engine.
 *
 * Source-compatible with HIXL (Huawei Xfer Library); the full contract of every
 * call is in docs/API.md. Every method may be called from any thread,
 * concurrently, except that Finalize must not race other calls.
 */
#ifndef HIXL_HIXL_H_
#define HIXL_HIXL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "hixl/hixl_types.h"

namespace hixl {
class ASCEND_FUNC_VISIBILITY Hixl {
 public:
  Hixl();
  ~Hixl();
  Hixl(const Hixl &) = delete;
  Hixl &operator=(const Hixl &) = delete;

  // local_engine: "ipv4:port", "ipv4", "[ipv6]:port" or "[ipv6]". With a port
  // > 0 the engine also listens there and serves remote engines.
  Status Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options);

  // Idempotent. Fails in-flight transfers, stops every engine thread.
  void Finalize();

  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &mem_handle);
  Status DeregisterMem(MemHandle mem_handle);

  Status Connect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  Status Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);

  Status ConnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  Status DisconnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  Status GetAsyncConnectStatus(const AscendString &remote_engine, AsyncConnectStatus &status);
  Status GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &status_map);

  Status TransferSync(const AscendString &remote_engine, TransferOp operation,
                      const std::vector<TransferOpDesc> &op_descs, int32_t timeout_in_millis = 1000);
  Status TransferAsync(const AscendString &remote_engine, TransferOp operation,
                       const std::vector<TransferOpDesc> &op_descs, const TransferArgs &optional_args,
                       TransferReq &req);
  Status GetTransferStatus(const TransferReq &req, TransferStatus &status);
  Status GetTransferStatus(const GetTransferStatusArgs &args, std::vector<TransferResult> &results);

  Status SendNotify(const AscendString &remote_engine, const NotifyDesc &notify, int32_t timeout_in_millis = 1000);
  Status GetNotifies(std::vector<NotifyDesc> &notifies);

  // [beyond HIXL] The regions a connected remote engine has registered now
  // (asked again: one round trip), so that a layer above can find memory the
  // remote publishes without a socket of its own (docs/API.md).
  Status GetRemoteMems(const AscendString &remote_engine, std::vector<MemDesc> &mems,
                       int32_t timeout_in_millis = 1000);

  static Status GetCapability(FeatureType feature_type, int32_t &value);

  // Beyond HIXL (an addition; HIXL's calls above are unchanged).
  // The transport carrying the data of the link to `remote_engine` ("tcp",
  // "shm", ...): SUCCESS, or NOT_CONNECTED without a working link.
  Status GetLinkTransport(const AscendString &remote_engine, AscendString &transport);

 private:
  class HixlImpl;
  std::unique_ptr<HixlImpl> impl_;
};
}  // namespace hixl

#endif  // HIXL_HIXL_H_
