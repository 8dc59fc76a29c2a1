// datadist_listener.cc: SetRole, and moving this side's listener (a new
// hixl engine at the new address, with this side's memory in it).
//
// LLM-DataDist has two sets of rules here. Its default backend refuses
// while links are up (LLM_EXIST_LINK), listens where llm.ListenIpInfo says
// (closing an earlier port), and stops listening when the option is absent.
// Its hixl backend (llm.TransferBackend "hixl") keeps the address of
// Initialize: another one is LLM_FEATURE_NOT_ENABLED, and the role changes
// whatever the links. This implementation has both, chosen the same way.
#include <cinttypes>

#include "datadist_impl.h"
#include "llm_log.h"

namespace llm_datadist {
namespace {

bool ValidRole(LlmRole role) { return role == LlmRole::kPrompt || role == LlmRole::kDecoder || role == LlmRole::kMix; }

const char *Shown(const std::string &listen) { return listen.empty() ? "(no port: a client)" : listen.c_str(); }

}  // namespace

Status LlmDataDist::LlmDataDistImpl::SetRole(LlmRole role, const std::map<AscendString, AscendString> &options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    LLM_LOGE("SetRole: not initialized");
    return LLM_FAILED;
  }
  if (!ValidRole(role)) {
    LLM_LOGE("SetRole: role %d is not kPrompt, kDecoder or kMix", static_cast<int>(role));
    return LLM_PARAM_INVALID;
  }
  std::string target;  // empty: no listener
  auto it = options.find(AscendString(OPTION_LISTEN_IP_INFO));
  if (it != options.end() &&
      !ParseListen(std::string(it->second.GetString(), it->second.GetLength()), &target)) {
    LLM_LOGE("SetRole: option %s must be \"ip:port\" with a port of 1-65535 (it is \"%s\")", OPTION_LISTEN_IP_INFO,
             it->second.GetString());
    return LLM_PARAM_INVALID;
  }
  if (opts_.hixl_backend) {
    if (it != options.end() && target != opts_.listen) {
      LLM_LOGE("SetRole: the hixl backend (%s \"hixl\") keeps the listen address of Initialize, %s; %s is refused "
               "(LLM-DataDist's rule; without that option the listener moves)",
               OPTION_TRANSFER_BACKEND, Shown(opts_.listen), target.c_str());
      return LLM_FEATURE_NOT_ENABLED;
    }
    role_ = role;
    return LLM_SUCCESS;
  }
  if (AnyLinkLocked()) {
    LLM_LOGE("SetRole: %zu link(s) and %zu domain(s) still up or being made; unlink every cluster first",
             links_.size() + link_busy_.size(), comms_.size());
    return LLM_EXIST_LINK;
  }
  if (target != opts_.listen) {
    Status s = MoveListenerLocked("SetRole", target);
    if (s != LLM_SUCCESS) return s;
  }
  role_ = role;
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::MoveListenerLocked(const char *call, const std::string &listen) {
  // Caller holds mu_ (so no cache, range or link changes meanwhile).
  auto fresh = std::make_unique<hixl::Hixl>();
  const std::string local = listen.empty() ? "0.0.0.0" : listen;
  hixl::Status hs = fresh->Initialize(local.c_str(), opts_.hixl);
  if (hs != hixl::SUCCESS) {
    LLM_LOGE("%s: cannot listen at %s (hixl status %u; its log says why): still at %s", call, Shown(listen), hs,
             Shown(opts_.listen));
    return hs == hixl::PARAM_INVALID ? LLM_PARAM_INVALID : LLM_FAILED;
  }
  // This side's memory in the new engine: the table, the buffer peers'
  // tables are read into, and every range of a cache.
  hixl::MemHandle table = nullptr, read = nullptr;
  std::map<std::pair<uint64_t, uint64_t>, hixl::MemHandle> handles;
  hixl::MemDesc d{};
  d.addr = reinterpret_cast<uintptr_t>(table_);
  d.len = kTableRegionLen;
  hs = fresh->RegisterMem(d, hixl::MEM_HOST, table);
  if (hs == hixl::SUCCESS) {
    d.addr = reinterpret_cast<uintptr_t>(read_buf_);
    d.len = kTableMapBytes;
    hs = fresh->RegisterMem(d, hixl::MEM_HOST, read);
  }
  for (auto r = ranges_.begin(); hs == hixl::SUCCESS && r != ranges_.end(); ++r) {
    d.addr = static_cast<uintptr_t>(r->first.first);
    d.len = static_cast<size_t>(r->first.second);
    hs = fresh->RegisterMem(d, r->second.type, handles[r->first]);
    if (hs != hixl::SUCCESS) {
      LLM_LOGE("%s: the new engine refused 0x%" PRIx64 "+%" PRIu64 " (hixl status %u)", call, r->first.first,
               r->first.second, hs);
    }
  }
  if (hs != hixl::SUCCESS) {
    LLM_LOGE("%s: this side's memory could not be registered at %s: still at %s", call, Shown(listen),
             Shown(opts_.listen));
    fresh->Finalize();
    return FromHixl(hs);
  }
  std::unique_ptr<hixl::Hixl> old;
  {
    // Calls in the old engine return first. It is finalized before any
    // call can see the new one: once it has, no peer touches this side's
    // memory through it (DropCache counts on that: engine_gen_).
    std::unique_lock<std::shared_mutex> writer(engine_mu_);
    old = std::move(engine_);
    engine_ = std::move(fresh);
    ++engine_gen_;
    old->Finalize();
  }
  table_handle_ = table;
  read_handle_ = read;
  for (auto &r : ranges_) r.second.handle = handles[r.first];
  LLM_LOGI("%s: cluster %" PRIu64 " now listens at %s (was %s)", call, cluster_id_, Shown(listen),
           Shown(opts_.listen));
  opts_.listen = listen;
  return LLM_SUCCESS;
}

}  // namespace llm_datadist
