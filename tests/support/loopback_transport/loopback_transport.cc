#include "support/loopback_transport/loopback_transport.h"

#include <memory>
#include <string>

#include "control/control_link.h"
#include "transport/registry.h"
#include "transport/transport.h"

namespace hixl_test {
namespace {

using hixl::Channel;
using hixl::Completion;
using hixl::ControlLink;
using hixl::Deadline;
using hixl::Piece;

// The control stream's own channel, lent: the link closes the control
// connection itself, after this.
class LoopbackChannel final : public Channel {
 public:
  explicit LoopbackChannel(ControlLink *control) : control_(control) {}
  const char *name() const override { return "loopback"; }
  void Submit(bool is_write, const Piece *pieces, size_t n, const std::shared_ptr<Completion> &done,
              Deadline deadline, bool caller_waits) override {
    control_->channel().Submit(is_write, pieces, n, done, deadline, caller_waits);
  }
  void Cancel(const Completion *done) override { control_->channel().Cancel(done); }
  void Progress() override { control_->channel().Progress(); }
  void Close(const char *) override {}
  bool broken() const override { return control_->broken(); }
  bool idle() const override { return control_->idle(); }

 private:
  ControlLink *control_;
};

class LoopbackTransport final : public hixl::Transport {
 public:
  const char *name() const override { return "loopback"; }
  uint16_t wire_id() const override { return 0x7f00; }
  bool CanReach(const hixl::PeerView &, hixl::MemKinds kinds, std::string *why) override {
    if (kinds & ~hixl::MemKindBit(hixl::wire::MemKind::kHost)) {
      *why = "it moves host memory only";
      return false;
    }
    return true;
  }
  hixl::Status Connect(const hixl::PeerView &, const hixl::LinkSetup &link, Deadline, std::unique_ptr<Channel> *out,
                       std::string *) override {
    *out = std::make_unique<LoopbackChannel>(link.control);
    return hixl::SUCCESS;
  }
};

}  // namespace

void RegisterLoopbackTransport() {
  hixl::Transports().Add({"loopback", {}, {"host"}, 1000,
                          [](const hixl::TransportEnv &, std::unique_ptr<hixl::Transport> *out, std::string *) {
                            *out = std::make_unique<LoopbackTransport>();
                            return hixl::SUCCESS;
                          }});
}

}  // namespace hixl_test
