#include "transport/ucx/ucx_transport.h"

#include <dirent.h>

#include <cctype>
#include <cstring>

#include "common/log.h"
#include "memory/host/page_access.h"
#include "memory/memory_kind.h"
#include "memory/registry.h"
#include "transport/ucx/ucx_channel.h"
#include "transport/ucx/ucx_loader.h"

namespace hixl::ucx {
namespace {

// Every RDMA device (InfiniBand, RoCE, iWARP) has an entry here. Without
// one UCX has none either, and the plug-in (with UCX, which installs signal
// handlers and memory hooks as it loads) is not even loaded.
bool KernelHasRdmaDevice() {
  DIR *d = opendir("/sys/class/infiniband");
  if (d == nullptr) return false;
  bool any = false;
  while (dirent *e = readdir(d)) {
    if (e->d_name[0] != '.') any = true;
  }
  closedir(d);
  return any;
}

// UCX's answer, asked once per process (it opens every memory domain).
bool UcxSeesRdmaDevice(const hixl_ucx_api_t *api, std::string *names) {
  static const std::pair<bool, std::string> seen = [api] {
    char buf[256] = {0};
    size_t count = 0;
    if (api->rdma_devices(buf, sizeof(buf), &count) != HIXL_UCX_OK) count = 0;
    return std::make_pair(count > 0, std::string(buf));
  }();
  *names = seen.second;
  return seen.first;
}

bool SettingName(const std::string &key, std::string *name) {
  if (key.empty() || key.size() > 64) return false;
  name->clear();
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    name->push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return true;
}

}  // namespace

bool DecodeAnswer(const wire::Sections &sections, std::vector<uint8_t> *address, std::string *why) {
  address->clear();
  const std::vector<uint8_t> *bytes = wire::FindSection(sections, kWireId);
  if (bytes == nullptr) {
    *why = "the target offers no UCX worker (its protocol_desc leaves out ucx, it has no RDMA device, or UCX is "
           "missing there)";
    return false;
  }
  if (bytes->size() < 2 || (*bytes)[0] != kHandshakeVersion || bytes->size() - 1 > kMaxWorkerAddress) {
    *why = "the target's UCX answer is malformed (" + std::to_string(bytes->size()) + " bytes, version " +
           std::to_string(bytes->empty() ? 0 : (*bytes)[0]) + ")";
    return false;
  }
  address->assign(bytes->begin() + 1, bytes->end());
  return true;
}

void EncodeEntryKey(unsigned access, const void *packed, size_t len, std::vector<uint8_t> *out) {
  out->clear();
  out->push_back(static_cast<uint8_t>(access));
  const auto *b = static_cast<const uint8_t *>(packed);
  out->insert(out->end(), b, b + len);
}

bool DecodeEntryKey(const wire::Sections &sections, EntryKey *out, std::string *why) {
  const std::vector<uint8_t> *bytes = wire::FindSection(sections, kWireId);
  if (bytes == nullptr || bytes->empty()) {
    *why = "the target registered the region without a UCX key (UCX could not map it there, or that process may "
           "not read it)";
    return false;
  }
  const unsigned access = (*bytes)[0];
  if ((access & HIXL_UCX_REMOTE_READ) == 0 || (access & ~(HIXL_UCX_REMOTE_READ | HIXL_UCX_REMOTE_WRITE)) != 0 ||
      bytes->size() < 2 || bytes->size() - 1 > kMaxPackedRkey) {
    *why = "the region's UCX entry is malformed (" + std::to_string(bytes->size()) + " bytes, access " +
           std::to_string(access) + "; keys of at most " + std::to_string(kMaxPackedRkey) + " bytes)";
    return false;
  }
  out->access = access;
  out->packed = bytes->data() + 1;
  out->len = bytes->size() - 1;
  return true;
}

Status UcxTransport::Create(const TransportEnv &env, std::unique_ptr<Transport> *out, std::string *why) {
  if (!env.requested && !KernelHasRdmaDevice()) {
    *why = "no RDMA device: tcp and shm are faster here (protocol_desc \"ucx:host\" uses it anyway)";
    return UNSUPPORTED;
  }
  const PluginLoad &load = LoadPlugin();
  if (load.api == nullptr) {
    *why = "the UCX plug-in did not load: " + load.why_not;
    return UNSUPPORTED;
  }
  const hixl_ucx_api_t *api = load.api;
  std::string devices;
  if (!env.requested && !UcxSeesRdmaDevice(api, &devices)) {
    *why = "UCX sees no RDMA device: tcp and shm are faster here (protocol_desc \"ucx:host\" uses it anyway)";
    return UNSUPPORTED;
  }
  // GlobalResourceConfig "ucx.tls", "ucx.net_devices"; any other "ucx.<key>"
  // is the UCX setting UCX_<KEY>. A user's own UCX_* environment wins.
  hixl_ucx_context_params_t p{};
  p.name = "hixl";
  p.traffic_class = env.rdma_traffic_class;
  p.service_level = env.rdma_service_level;
  std::vector<std::pair<std::string, std::string>> named;
  bool keepalive = false;
  for (const auto &[key, value] : env.config) {
    std::string name;
    if (!SettingName(key, &name)) {
      *why = "GlobalResourceConfig: ucx." + key + " is not a UCX setting name (letters, digits, _)";
      return PARAM_INVALID;
    }
    if (name == "TLS") {
      p.tls = value.c_str();
    } else if (name == "NET_DEVICES") {
      p.net_devices = value.c_str();
    } else {
      keepalive = keepalive || name == "KEEPALIVE_INTERVAL";
      named.emplace_back(name, value);
    }
  }
  // The heartbeat interval is how soon a peer's death should show: UCX's
  // keepalive finds a dead peer over shared memory (20 s by default).
  if (!keepalive && env.heartbeat_ms > 0) {
    named.emplace_back("KEEPALIVE_INTERVAL", std::to_string(env.heartbeat_ms) + "ms");
  }
  std::vector<hixl_ucx_setting_t> settings;
  for (const auto &[n, v] : named) settings.push_back({n.c_str(), v.c_str()});
  p.settings = settings.data();
  p.num_settings = settings.size();

  std::unique_ptr<UcxTransport> t(new UcxTransport(api, env));
  hixl_ucx_status_t st = api->context_create(&p, &t->ctx_);
  if (st != HIXL_UCX_OK) {
    *why = std::string("UCX: making its context failed: ") + api->status_name(st) + " (see the lines above)";
    return st == HIXL_UCX_ERR_INVALID ? PARAM_INVALID : UNSUPPORTED;
  }
  const void *addr = nullptr;
  size_t len = 0;
  st = api->worker_address(t->ctx_, &addr, &len);
  if (st != HIXL_UCX_OK || len == 0 || len > kMaxWorkerAddress) {
    *why = "UCX: its worker address is unusable (" + std::to_string(len) + " bytes)";
    t->Stop();
    return UNSUPPORTED;
  }
  t->address_.push_back(kHandshakeVersion);
  t->address_.insert(t->address_.end(), static_cast<const uint8_t *>(addr), static_cast<const uint8_t *>(addr) + len);
  HIXL_LOGI("Initialize %s: ucx transport up (%s%s%s)", env.local_name.c_str(), api->version(),
            devices.empty() ? "" : "; RDMA devices ", devices.c_str());
  *out = std::move(t);
  return SUCCESS;
}

UcxTransport::~UcxTransport() { Stop(); }

void UcxTransport::Stop() {
  MutexLock lock(&mu_);
  if (stopped_) return;
  stopped_ = true;
  if (ctx_ != nullptr) api_->context_destroy(ctx_);  // unmaps what is still registered
}

void UcxTransport::PostToIo(std::function<void()> fn) {
  if (io_workers_ != nullptr && !io_workers_->empty() && (*io_workers_)[0]->Post(fn)) return;
  fn();  // no worker runs any more: the streams are gone, the answer goes nowhere
}

void UcxTransport::Offer(std::vector<uint8_t> *bytes) { bytes->push_back(kHandshakeVersion); }

void UcxTransport::Answer(const PeerView &peer, TransportAnswer *answer) {
  const std::vector<uint8_t> *offer = wire::FindSection(*peer.sections, kWireId);
  if (offer == nullptr || offer->empty() || (*offer)[0] != kHandshakeVersion) return;
  answer->bytes = address_;
  // The peer's puts and gets reach our memory without our checks (RDMA
  // NICs, UCX's emulated RMA): DeregisterMem waits for its REVOKE_ACK.
  answer->direct = true;
}

bool UcxTransport::CanReach(const PeerView &peer, MemKinds kinds, std::string *why) {
  if (kinds & ~MemKindBit(wire::MemKind::kHost)) {
    *why = "it moves host memory only";
    return false;
  }
  std::vector<uint8_t> address;
  return DecodeAnswer(*peer.sections, &address, why);
}

Status UcxTransport::Connect(const PeerView &peer, const LinkSetup &link, Deadline, std::unique_ptr<Channel> *out,
                             std::string *why) {
  std::vector<uint8_t> address;
  if (!DecodeAnswer(*peer.sections, &address, why)) return FAILED;
  auto channel = std::make_unique<UcxChannel>(api_, ctx_, std::move(address), link.regions, peer.name,
                                              [this](std::function<void()> fn) { PostToIo(std::move(fn)); });
  Status s = channel->Open(why);
  if (s != SUCCESS) return s;
  *out = std::move(channel);
  return SUCCESS;
}

Status UcxTransport::OnRegister(Region &region) {
  if (region.memory->wire_kind() != wire::MemKind::kHost) return SUCCESS;  // device memory: issue 21
  // What this process may do with all of the region now: UCX's own copies
  // for peers (emulated RMA) and RDMA NICs check no page protection, so
  // peers get no more. (Taking access away later is not allowed while it is
  // registered: docs/ucx.md.)
  const unsigned pages = RangeAccess(region.addr, region.len);
  if ((pages & kPageRead) == 0) {
    HIXL_LOGI("RegisterMem 0x%zx+%zu: this process may not read all of it; peers over ucx cannot reach it",
              static_cast<size_t>(region.addr), region.len);
    return SUCCESS;
  }
  const unsigned access = HIXL_UCX_REMOTE_READ | ((pages & kPageWrite) != 0 ? unsigned{HIXL_UCX_REMOTE_WRITE} : 0u);
  MutexLock lock(&mu_);
  if (stopped_) return SUCCESS;
  hixl_ucx_mem_t *mem = nullptr;
  hixl_ucx_status_t st = api_->mem_register(ctx_, reinterpret_cast<void *>(region.addr), region.len,
                                            HIXL_UCX_MEM_HOST, access, &mem);
  const void *rkey = nullptr;
  size_t len = 0;
  if (st == HIXL_UCX_OK) st = api_->mem_rkey(mem, &rkey, &len);
  if (st != HIXL_UCX_OK || len == 0 || len > kMaxPackedRkey) {
    // Registered all the same: other transports serve it; peers over ucx
    // are refused it (its entry has no key).
    HIXL_LOGW("RegisterMem 0x%zx+%zu: UCX cannot map it (%s, key of %zu bytes); peers over ucx cannot reach it",
              static_cast<size_t>(region.addr), region.len, api_->status_name(st), len);
    if (mem != nullptr) api_->mem_deregister(mem);
    return SUCCESS;
  }
  if ((access & HIXL_UCX_REMOTE_WRITE) == 0) {
    HIXL_LOGI("RegisterMem 0x%zx+%zu: this process may not write all of it; peers over ucx may only read it",
              static_cast<size_t>(region.addr), region.len);
  }
  wire::Section sec{kWireId, {}};
  EncodeEntryKey(access, rkey, len, &sec.bytes);
  region.sections.push_back(std::move(sec));
  // The registration is the context's (context_destroy unmaps it): no deleter.
  region.transport_state.emplace_back(kWireId, std::shared_ptr<void>(mem, [](void *) {}));
  return SUCCESS;
}

void UcxTransport::OnDeregister(const Region &region) {
  for (const auto &[id, state] : region.transport_state) {
    if (id != kWireId) continue;
    MutexLock lock(&mu_);
    if (!stopped_) api_->mem_deregister(static_cast<hixl_ucx_mem_t *>(state.get()));
  }
}

}  // namespace hixl::ucx
