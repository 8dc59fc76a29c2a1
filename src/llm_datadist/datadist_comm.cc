// datadist_comm.cc: Link, LLM-DataDist's two-sided link of a domain of
// members named by a rank table (HCCL's communication domain there).
//
// On hixl a member is an engine listening at its rank's address. Each
// member's Link makes it listen there (moving its listener if it has no
// link yet) and links it to every other member, each a LinkLlmClusters-like
// link marked with the domain's id; since every member does the same, any
// member can pull from and push to any other. A member not reachable before
// the deadline fails the call, and what it had linked is unlinked again.
#include <algorithm>
#include <cinttypes>
#include <future>
#include <set>
#include <thread>

#include "datadist_impl.h"
#include "llm_log.h"
#include "rank_table.h"

namespace llm_datadist {
namespace {

// LLM-DataDist's limits: a domain's name is shorter than 128 characters,
// it has at most 4 members, and a process at most 512 domains.
constexpr size_t kMaxCommName = 128;
constexpr size_t kMaxMembers = 4;
constexpr size_t kMaxComms = 512;
// Between tries to reach a member that does not listen yet: doubling from
// the first to the last (each refused try is a line of hixl's log).
constexpr auto kFirstRetryPause = std::chrono::milliseconds(20);
constexpr auto kLastRetryPause = std::chrono::milliseconds(500);

}  // namespace

Status LlmDataDist::LlmDataDistImpl::Link(const std::string &comm_name,
                                          const std::map<uint64_t, uint32_t> &cluster_rank_info,
                                          const std::string &rank_table, int32_t timeout_ms, uint64_t &comm_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      LLM_LOGE("Link: not initialized");
      return LLM_FAILED;
    }
    if (opts_.hixl_backend) {
      LLM_LOGE("Link: the hixl backend (%s \"hixl\") has no rank-table links (as LLM-DataDist's); use "
               "LinkLlmClusters",
               OPTION_TRANSFER_BACKEND);
      return LLM_FEATURE_NOT_ENABLED;
    }
  }
  std::set<uint32_t> ranks;
  for (const auto &kv : cluster_rank_info) ranks.insert(kv.second);
  if (comm_name.empty() || comm_name.size() >= kMaxCommName || cluster_rank_info.size() < 2 ||
      cluster_rank_info.size() > kMaxMembers || ranks.size() != cluster_rank_info.size() ||
      cluster_rank_info.count(cluster_id_) == 0 || timeout_ms == 0 || timeout_ms < -1) {
    LLM_LOGE("Link: comm_name of %zu characters (1-%zu), %zu members (2-%zu, distinct ranks, this cluster %" PRIu64
             " among them), timeout %d ms (> 0, or -1)",
             comm_name.size(), kMaxCommName - 1, cluster_rank_info.size(), kMaxMembers, cluster_id_, timeout_ms);
    return LLM_PARAM_INVALID;
  }
  std::map<uint32_t, std::string> engines;
  std::string why;
  if (!RankAddresses(rank_table, ranks, &engines, &why)) {
    LLM_LOGE("Link %s: %s", comm_name.c_str(), why.c_str());
    return LLM_LINK_FAILED;  // as LLM-DataDist, whose HCCL refuses such a table
  }
  const std::string self = engines[cluster_rank_info.at(cluster_id_)];
  std::vector<uint64_t> members;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (comms_.size() >= kMaxComms) {
      LLM_LOGE("Link %s: %zu domains are linked; at most %zu", comm_name.c_str(), comms_.size(), kMaxComms);
      return LLM_PARAM_INVALID;
    }
    for (const auto &kv : cluster_rank_info) {
      if (kv.first == cluster_id_) continue;
      if (links_.count(kv.first) != 0 || link_busy_.count(kv.first) != 0) {
        LLM_LOGE("Link %s: cluster %" PRIu64 " is linked already, or being linked or unlinked", comm_name.c_str(),
                 kv.first);
        return links_.count(kv.first) != 0 ? LLM_ALREADY_LINK : LLM_PROCESSING_LINK;
      }
      members.push_back(kv.first);
    }
    if (self != opts_.listen) {
      // The other members reach this one at its rank's address.
      if (AnyLinkLocked()) {
        LLM_LOGE("Link %s: this cluster's rank listens at %s, but this side listens at %s and has links up: "
                 "unlink them first (the listener moves with a new engine)",
                 comm_name.c_str(), self.c_str(), opts_.listen.empty() ? "no port" : opts_.listen.c_str());
        return LLM_LINK_FAILED;
      }
      if (MoveListenerLocked("Link", self) != LLM_SUCCESS) return LLM_LINK_FAILED;
    }
    for (uint64_t id : members) link_busy_.insert(id);
  }
  const int32_t wait_ms = timeout_ms > 0 ? timeout_ms : LinkTimeoutMs(opts_);
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
  LLM_LOGI("Link %s: cluster %" PRIu64 " at %s links to %zu member(s) within %d ms", comm_name.c_str(), cluster_id_,
           self.c_str(), members.size(), wait_ms);
  std::vector<std::future<Status>> futures;
  std::vector<PeerLink> made(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string remote = engines[cluster_rank_info.at(members[i])];
    futures.push_back(std::async(std::launch::async, [this, &made, &members, i, remote, deadline] {
      return LinkMember(members[i], remote, deadline, &made[i]);
    }));
  }
  Status result = LLM_SUCCESS;
  for (auto &f : futures) {
    Status s = f.get();
    if (s != LLM_SUCCESS) result = s;
  }
  if (result != LLM_SUCCESS) {
    // Nothing stays linked.
    for (const PeerLink &l : made) {
      if (l.remote.empty()) continue;
      OnEngine([&](hixl::Hixl &e) { return e.Disconnect(l.remote.c_str(), 1000); });
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t id : members) link_busy_.erase(id);
  if (result != LLM_SUCCESS) {
    LLM_LOGE("Link %s: not every member was reached; nothing is linked", comm_name.c_str());
    return result;
  }
  comm_id = next_comm_id_++;
  for (size_t i = 0; i < members.size(); ++i) {
    made[i].comm_id = comm_id;
    links_[members[i]] = made[i];
  }
  comms_[comm_id] = CommDomain{comm_name, members};
  LLM_LOGI("Link %s (comm %" PRIu64 "): linked", comm_name.c_str(), comm_id);
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::LinkMember(uint64_t id, const std::string &remote, Clock::time_point deadline,
                                                PeerLink *link) {
  hixl::Status hs = hixl::FAILED;
  int tries = 0;
  Clock::duration pause = kFirstRetryPause;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    ++tries;
    hs = OnEngine([&](hixl::Hixl &e) { return e.Connect(remote.c_str(), static_cast<int32_t>(left)); });
    if (hs == hixl::SUCCESS || hs == hixl::ALREADY_CONNECTED || hs == hixl::PARAM_INVALID) break;
    // Not listening yet (the member has not called Link), or gone: again,
    // until the deadline.
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
    pause = std::min<Clock::duration>(pause * 2, kLastRetryPause);
  }
  if (hs == hixl::ALREADY_CONNECTED) {
    LLM_LOGE("Link: %s (cluster %" PRIu64 ") is linked already under another cluster id", remote.c_str(), id);
    return LLM_ALREADY_LINK;
  }
  if (hs != hixl::SUCCESS) {
    LLM_LOGE("Link: cluster %" PRIu64 " at %s was not reached in %d tries (hixl status %u)", id, remote.c_str(), tries,
             hs);
    return LLM_LINK_FAILED;
  }
  link->remote = remote;
  if (FindPeerTable(remote, id, deadline, &link->table_addr) != LLM_SUCCESS) {
    // FindPeerTable said why; the caller disconnects.
    return LLM_LINK_FAILED;
  }
  return LLM_SUCCESS;
}

Status LlmDataDist::LlmDataDistImpl::Unlink(uint64_t comm_id) {
  std::vector<std::pair<uint64_t, std::string>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!initialized_) {
      LLM_LOGE("Unlink: not initialized");
      return LLM_FAILED;
    }
    auto it = comms_.find(comm_id);
    if (it == comms_.end()) {
      LLM_LOGE("Unlink: comm %" PRIu64 " is not linked", comm_id);
      return LLM_NOT_YET_LINK;
    }
    for (uint64_t id : it->second.members) {
      auto l = links_.find(id);
      // A member unlinked by UnlinkLlmClusters meanwhile is not this domain's any more.
      if (l == links_.end() || l->second.comm_id != comm_id) continue;
      gone.emplace_back(id, l->second.remote);
      links_.erase(l);
      link_busy_.insert(id);
    }
    comms_.erase(it);
  }
  Status result = LLM_SUCCESS;
  for (const auto &g : gone) {
    hixl::Status hs = OnEngine([&](hixl::Hixl &e) { return e.Disconnect(g.second.c_str(), 1000); });
    if (hs != hixl::SUCCESS && hs != hixl::NOT_CONNECTED) {
      LLM_LOGE("Unlink: cluster %" PRIu64 " at %s: hixl status %u; the link is dropped here", g.first,
               g.second.c_str(), hs);
      result = LLM_UNLINK_FAILED;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto &g : gone) link_busy_.erase(g.first);
  return result;
}

Status LlmDataDist::LlmDataDistImpl::QueryRegisterMemStatus(uint64_t comm_id, RegisterMemStatus &status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!initialized_) {
    LLM_LOGE("QueryRegisterMemStatus: not initialized");
    return LLM_FAILED;
  }
  if (comms_.count(comm_id) == 0) {
    LLM_LOGE("QueryRegisterMemStatus: comm %" PRIu64 " is not linked", comm_id);
    return LLM_NOT_YET_LINK;
  }
  // Link returns once every member's table was read: nothing is pending.
  status = RegisterMemStatus::kOk;
  return LLM_SUCCESS;
}

}  // namespace llm_datadist
