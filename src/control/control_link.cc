#include "control/control_link.h"

#include "common/log.h"
#include "transport/tcp/tcp_link.h"
#include "wire/frame.h"

namespace hixl {

Status ControlLink::Open(const Params &params, const std::vector<std::unique_ptr<IoWorker>> &workers,
                         Deadline deadline, std::unique_ptr<ControlLink> *out, wire::HelloAck *ack,
                         std::string *why) {
  std::unique_ptr<ControlLink> link(new ControlLink());
  link->remote_name_ = params.remote.ToString();
  link->regions_ = params.regions;
  tcp::LinkParams lp;
  lp.local_name = params.local_name;
  lp.remote = params.remote;
  lp.heartbeat_ms = params.heartbeat_ms;
  lp.host = params.host;
  lp.offers = params.offers;
  lp.cancel = params.cancel;
  std::weak_ptr<RemoteRegions> weak = params.regions;
  // The handshake's table, in place before any REVOKE can be read.
  lp.after_hello = [weak](const wire::HelloAck &a, int) {
    if (auto r = weak.lock()) r->Replace(a.regions.entries, /*order=*/0);
    return true;
  };
  // REVOKE: forget the region (waiting for copies into it), then say so.
  // The link may be gone by then; the target counts the closed stream as
  // the answer.
  // A channel whose batches reach the target's memory unchecked (ucx) holds
  // the answer back until none of them can touch the region.
  lp.on_push = [weak, hook = params.before_revoke_ack](tcp::InitiatorStream &stream, wire::MsgType type, uint64_t id,
                                                       std::vector<uint8_t> &&body, uint64_t rx_order) {
    wire::RegionInfo region;
    auto r = weak.lock();
    if (r == nullptr || type != wire::MsgType::kRevoke || !wire::DecodeRevoke(body.data(), body.size(), &region)) {
      return;
    }
    r->Revoke(region.addr, region.len, rx_order);
    HIXL_LOGD("%s: region 0x%llx+%llu revoked by the target", stream.name().c_str(),
              static_cast<unsigned long long>(region.addr), static_cast<unsigned long long>(region.len));
    // The stream may be gone by the time a held-back answer goes: then the
    // target counts the closed stream as the answer.
    std::weak_ptr<tcp::InitiatorStream> ws = stream.shared_from_this();
    auto ack = [ws, id] {
      auto s = ws.lock();
      if (s == nullptr) return;
      std::vector<std::unique_ptr<tcp::Request>> reqs;
      reqs.push_back(tcp::MakeRequest(wire::MsgType::kRevokeAck, {}, std::make_shared<Completion>()));
      reqs.back()->wire_id = id;  // echoes the REVOKE's id
      reqs.back()->done->AddParts(1);
      s->Submit(&reqs);
    };
    if (hook) {
      hook(region, std::move(ack));
    } else {
      ack();
    }
  };
  // As the stream closes, copies in flight finish first (each checks the
  // link, now broken, under a Hold).
  lp.before_close = [weak] {
    if (auto r = weak.lock()) r->WaitForHolds();
  };
  Status s = tcp::TcpLink::Open(lp, workers, deadline, &link->tcp_, ack, why);
  if (s != SUCCESS) return s;
  const wire::RegionPage &head = ack->regions;
  if (head.first != 0) {
    *why = "malformed handshake reply: its region table starts at entry " + std::to_string(head.first);
    return FAILED;
  }
  if (head.count < head.total) {
    // A big table: the rest in pages, all of the handshake's generation (or
    // the whole table again if it changed meanwhile).
    std::vector<wire::RegionEntry> entries = head.entries;
    s = link->FetchRest(head, deadline, &entries, why);
    if (s == SUCCESS) {
      link->regions_->Replace(std::move(entries), /*order=*/0);
    } else if (*why == "changed") {
      s = link->FetchRegions(deadline);
      if (s != SUCCESS) *why = "could not fetch its region table";
    }
    if (s != SUCCESS) return s;
  }
  *out = std::move(link);
  return SUCCESS;
}

ControlLink::~ControlLink() = default;

uint64_t ControlLink::link_nonce() const { return tcp_->link_nonce(); }
int ControlLink::fd() const { return tcp_->first_fd(); }

Status ControlLink::FetchPage(uint32_t first, Deadline deadline, wire::RegionPage *page, uint64_t *rx_order) {
  struct Reply {
    bool ok = false;
    wire::RegionPage page;
    uint64_t rx_order = 0;
  };
  auto reply = std::make_shared<Reply>();
  auto done = std::make_shared<Completion>();
  std::vector<uint8_t> body;
  wire::EncodeRegionsReq(first, &body);
  auto req = tcp::MakeRequest(wire::MsgType::kRegionsReq, std::move(body), done);
  // May run after this call gave up waiting: it holds what it fills.
  req->on_reply = [reply](std::vector<uint8_t> &&bytes, uint64_t rx_order) {
    reply->ok = wire::DecodeRegionPage(bytes.data(), bytes.size(), &reply->page);
    reply->rx_order = rx_order;
  };
  tcp_->SubmitControl(std::move(req));
  Status s = AwaitOrCancel(*tcp_, *done, deadline);
  if (s != SUCCESS) return s;
  if (!reply->ok || reply->page.first != first || (reply->page.count == 0 && first < reply->page.total)) {
    HIXL_LOGE("%s: malformed region table page from the peer (asked from entry %u)", remote_name_.c_str(), first);
    return FAILED;
  }
  *page = std::move(reply->page);
  *rx_order = reply->rx_order;
  return SUCCESS;
}

Status ControlLink::FetchRest(const wire::RegionPage &head, Deadline deadline, std::vector<wire::RegionEntry> *entries,
                              std::string *why) {
  for (uint32_t next = head.first + head.count; next < head.total;) {
    wire::RegionPage page;
    uint64_t order = 0;
    Status s = FetchPage(next, deadline, &page, &order);
    if (s != SUCCESS) {
      *why = "fetching its region table failed";
      return s;
    }
    if (page.generation != head.generation || page.total != head.total) {
      *why = "changed";
      return FAILED;
    }
    for (auto &e : page.entries) entries->push_back(std::move(e));
    next += page.count;
  }
  return SUCCESS;
}

Status ControlLink::FetchRegions(Deadline deadline) {
  for (int attempt = 0; attempt < kMaxFetchTries; ++attempt) {
    wire::RegionPage head;
    uint64_t order = 0;
    Status s = FetchPage(0, deadline, &head, &order);
    if (s != SUCCESS) return s;
    std::vector<wire::RegionEntry> entries = std::move(head.entries);
    std::string why;
    s = FetchRest(head, deadline, &entries, &why);
    if (s == SUCCESS) {
      // Applied by the first page's place on the stream: REVOKEs read after
      // it may be for regions of this table (pages of one generation saw no
      // deregistration, so none is for a region that came back).
      regions_->Replace(std::move(entries), order);
      return SUCCESS;
    }
    if (why != "changed") return s;
  }
  HIXL_LOGE("%s: its region table changed while it was fetched, %d times in a row", remote_name_.c_str(),
            kMaxFetchTries);
  return FAILED;
}

void ControlLink::Notify(const wire::Notify &notify, const std::shared_ptr<Completion> &done) {
  std::vector<uint8_t> body;
  wire::EncodeNotify(notify, &body);
  tcp_->SubmitControl(tcp::MakeRequest(wire::MsgType::kNotifyReq, std::move(body), done));
}

void ControlLink::SayUsing(uint16_t transport) {
  std::vector<uint8_t> body;
  wire::EncodeUsing(transport, &body);
  tcp_->SubmitControl(tcp::MakeRequest(wire::MsgType::kUsing, std::move(body), std::make_shared<Completion>()));
}

void ControlLink::Cancel(const Completion *done) { tcp_->Cancel(done); }
void ControlLink::Close(const char *why) { tcp_->Close(why); }
bool ControlLink::broken() const { return tcp_->broken(); }
bool ControlLink::idle() const { return tcp_->idle(); }
bool ControlLink::CheckAlive(int64_t interval_ms) { return tcp_->CheckAlive(interval_ms); }
void ControlLink::Progress() { tcp_->Progress(); }
Channel &ControlLink::channel() { return *tcp_; }

}  // namespace hixl
