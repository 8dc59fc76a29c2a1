#include "engine/serving.h"

#include <algorithm>

#include "common/log.h"

namespace hixl {
namespace {

bool IsWildcard(const EngineAddress &a) { return a.ip == "0.0.0.0" || a.ip == "::"; }

}  // namespace

Status Serving::OnHello(const wire::Hello &hello, const std::shared_ptr<ControlPeer> &control, int fd,
                        wire::HelloAck *ack, bool *direct) {
  *direct = false;
  ack->target = name_;
  ack->host = host_;
  EngineAddress dialed;
  std::string why;
  const bool same = ParseEngineAddress(hello.target, &dialed, &why) && dialed.port == local_.port &&
                    (dialed.ip == local_.ip || IsWildcard(local_));
  if (!same) {
    ack->reason = "this is engine " + name_ + ", not " + hello.target;
    return FAILED;
  }
  if (stopping_) {
    ack->reason = "engine " + name_ + " is finalizing";
    return FAILED;
  }
  if (control != nullptr) {
    // The transports answer the peer's offers; those that let it reach our
    // memory itself make it a peer DeregisterMem must hear from.
    PeerView peer;
    peer.name = hello.initiator;
    peer.host = hello.host;
    peer.sections = &hello.offers;
    peer.control_fd = fd;
    std::vector<uint16_t> via;
    for (const auto &t : transports_) {
      TransportAnswer answer;
      t->Answer(peer, &answer);
      if (!answer.bytes.empty()) ack->answers.push_back({t->wire_id(), std::move(answer.bytes)});
      if (answer.direct) via.push_back(t->wire_id());
    }
    *direct = !via.empty();
    {
      MutexLock lock(&mu_);
      direct_via_[control.get()] = via;
    }
    // Counted among the peers to revoke from before it gets the table.
    revocation_.AddPeer(control, *direct);
  }
  ack->regions = registry_.Snapshot()->Page(0);
  return SUCCESS;
}

bool Serving::OnUsing(ControlPeer *control, const std::string &who, uint16_t transport) {
  const char *name = "an unknown transport";
  for (const auto &t : transports_) {
    if (t->wire_id() == transport) name = t->name();
  }
  bool direct = false;
  {
    MutexLock lock(&mu_);
    auto it = direct_via_.find(control);
    direct = it != direct_via_.end() &&
             std::find(it->second.begin(), it->second.end(), transport) != it->second.end();
  }
  HIXL_LOGI_RL("serving %s: its data goes over %s (transport %u)", who.c_str(), name, static_cast<unsigned>(transport));
  // Revocations it owes as a direct peer are still waited for; later ones
  // only as a peer's whose frames we check ourselves.
  if (!direct) revocation_.SetIndirect(control);
  return direct;
}

Status Serving::OnNotify(uint64_t link_key, const std::string &peer, wire::Notify &&notify) {
  // Shared by address, not port: one host's many links take a share.
  const std::string host = peer.substr(0, peer.rfind(':'));
  return inbox_.Push(link_key, host, std::move(notify.name), std::move(notify.msg));
}

void Serving::OnControlClosed(ControlPeer *control) {
  {
    MutexLock lock(&mu_);
    direct_via_.erase(control);
  }
  revocation_.RemovePeer(control);
}

}  // namespace hixl
