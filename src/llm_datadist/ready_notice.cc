#include "ready_notice.h"

#include <cerrno>
#include <cstdlib>

namespace llm_datadist {
namespace {

constexpr char kName[] = "llm_datadist.kv_ready";
constexpr size_t kMaxMsg = 1024;  // hixl's limit

bool ParseU64(const std::string &s, uint64_t *v) {
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  *v = std::strtoull(s.c_str(), nullptr, 10);
  return errno == 0;
}

// The next field up to ';' from *at, or false if there is none.
bool Field(const std::string &msg, size_t *at, std::string *out) {
  size_t semi = msg.find(';', *at);
  if (semi == std::string::npos) return false;
  *out = msg.substr(*at, semi - *at);
  *at = semi + 1;
  return true;
}

}  // namespace

bool EncodeReadyNotice(uint64_t src_cluster, const std::string &tag, Status status,
                       const std::vector<int32_t> &failed_layers, hixl::NotifyDesc *out) {
  std::string msg = "1;" + std::to_string(src_cluster) + ";" + std::to_string(status) + ";";
  for (size_t i = 0; i < failed_layers.size(); ++i) msg += (i ? "," : "") + std::to_string(failed_layers[i]);
  msg += ";" + tag;
  if (msg.size() > kMaxMsg) return false;
  out->name = kName;
  out->notify_msg = hixl::AscendString(msg.data(), msg.size());
  return true;
}

bool DecodeReadyNotice(const hixl::NotifyDesc &notify, KvReadyInfo *out) {
  if (std::string(notify.name.GetString(), notify.name.GetLength()) != kName) return false;
  const std::string msg(notify.notify_msg.GetString(), notify.notify_msg.GetLength());
  size_t at = 0;
  std::string version, cluster, status, layers;
  uint64_t v = 0;
  if (!Field(msg, &at, &version) || version != "1" || !Field(msg, &at, &cluster) || !Field(msg, &at, &status) ||
      !Field(msg, &at, &layers) || !ParseU64(cluster, &out->src_cluster_id) || !ParseU64(status, &v) ||
      v > UINT32_MAX) {
    return false;
  }
  out->status = static_cast<Status>(v);
  out->failed_layers.clear();
  for (size_t pos = 0; pos < layers.size();) {
    size_t comma = layers.find(',', pos);
    if (comma == std::string::npos) comma = layers.size();
    if (!ParseU64(layers.substr(pos, comma - pos), &v) || v > INT32_MAX) return false;
    out->failed_layers.push_back(static_cast<int32_t>(v));
    pos = comma + 1;
  }
  out->tag = msg.substr(at);
  return true;
}

}  // namespace llm_datadist
