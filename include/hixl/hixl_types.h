/*
 * hixl_types.h: types, status codes and option keys of the HIXL API.
 *
 * Source-compatible with HIXL (Huawei Xfer Library). Names, values and layouts
 * are part of the contract (docs/API.md); do not reorder. C++14, standard
 * library only.
 */
#ifndef HIXL_HIXL_TYPES_H_
#define HIXL_HIXL_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#ifndef ASCEND_FUNC_VISIBILITY
#define ASCEND_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif

namespace ge {
// HIXL's string type. A thin value type over std::string; it may hold
// embedded NUL bytes when built from (data, length).
class AscendString {
 public:
  AscendString() = default;
  AscendString(const char *name) : str_(name == nullptr ? "" : name) {}  // NOLINT: implicit by contract
  AscendString(const char *name, size_t length)
      : str_(name == nullptr ? std::string() : std::string(name, length)) {}

  const char *GetString() const { return str_.c_str(); }
  size_t GetLength() const { return str_.size(); }

  bool operator<(const AscendString &d) const { return str_ < d.str_; }
  bool operator>(const AscendString &d) const { return str_ > d.str_; }
  bool operator<=(const AscendString &d) const { return str_ <= d.str_; }
  bool operator>=(const AscendString &d) const { return str_ >= d.str_; }
  bool operator==(const AscendString &d) const { return str_ == d.str_; }
  bool operator!=(const AscendString &d) const { return str_ != d.str_; }

 private:
  std::string str_;
};
}  // namespace ge

namespace hixl {
using Status = uint32_t;
using AscendString = ge::AscendString;
using MemHandle = void *;
using TransferReq = void *;

// Option keys for Hixl::Initialize.
constexpr const char OPTION_ENABLE_USE_FABRIC_MEM[] = "EnableUseFabricMem";
constexpr const char OPTION_RDMA_TRAFFIC_CLASS[] = "RdmaTrafficClass";
constexpr const char OPTION_RDMA_SERVICE_LEVEL[] = "RdmaServiceLevel";
constexpr const char OPTION_BUFFER_POOL[] = "BufferPool";
constexpr const char OPTION_GLOBAL_RESOURCE_CONFIG[] = "GlobalResourceConfig";
constexpr const char OPTION_AUTO_CONNECT[] = "AutoConnect";
constexpr const char OPTION_LOCAL_COMM_RES[] = "LocalCommRes";

// Status codes.
constexpr Status SUCCESS = 0U;
constexpr Status PARAM_INVALID = 103900U;
constexpr Status TIMEOUT = 103901U;
constexpr Status NOT_CONNECTED = 103902U;
constexpr Status ALREADY_CONNECTED = 103903U;
constexpr Status NOTIFY_FAILED = 103904U;
constexpr Status UNSUPPORTED = 103905U;
constexpr Status RESOURCE_EXHAUSTED = 203900U;
constexpr Status FAILED = 503900U;

enum MemType { MEM_DEVICE, MEM_HOST };

enum TransferOp { READ, WRITE };

struct MemDesc {
  uintptr_t addr;
  size_t len;
  uint8_t reserved[128] = {};
};

struct TransferOpDesc {
  uintptr_t local_addr;
  uintptr_t remote_addr;
  size_t len;
};

enum class TransferStatus { WAITING, COMPLETED, TIMEOUT, FAILED };

struct TransferArgs {
  const void *user_data = nullptr;
  uint8_t reserved[120] = {};
};

struct GetTransferStatusArgs {
  uint32_t max_query_count = UINT32_MAX;
  bool skip_waiting = false;
  uint8_t reserved[123] = {};
};

struct TransferResult {
  TransferReq req = nullptr;
  const void *user_data = nullptr;
  TransferStatus status = TransferStatus::WAITING;
  uint8_t reserved[108] = {};
};

struct NotifyDesc {
  AscendString name;
  AscendString notify_msg;
};

enum class AsyncConnectStatus {
  NOT_CONNECT,
  CONNECT_PENDING,
  CONNECTING,
  CONNECTED,
  CONNECT_FAILED,
  DISCONNECT_PENDING,
  DISCONNECTING
};

enum FeatureType : int32_t { AUTO_CONNECT = 0, CLIENT_SERVER_COMM = 1 };

constexpr int32_t FEATURE_SUPPORTED = 1;
constexpr int32_t FEATURE_NOT_SUPPORTED = 0;
}  // namespace hixl

#endif  // HIXL_HIXL_TYPES_H_
