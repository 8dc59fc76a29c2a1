#include "baselines.h"

#include <cstring>
#include <vector>

#include "bench_util.h"
#include "tcp_baseline.h"

namespace hixl_bench {
namespace {

class TcpBaseline : public Baseline {
 public:
  TcpBaseline(std::string host, int port, uint64_t total_size)
      : host_(std::move(host)), port_(port), size_(total_size) {}
  ~TcpBaseline() override { FreeBuffer(buf_, size_); }

  const char *name() const override { return "tcp"; }

  bool Prepare(const Workload &w, std::string *why) override {
    if (buf_ == nullptr && (buf_ = static_cast<char *>(AllocBuffer(size_))) == nullptr) {
      *why = "cannot allocate the baseline buffer";
      return false;
    }
    // Connections are kept across points; more are opened when a point has
    // more threads.
    while (conns_.size() < static_cast<size_t>(w.point.threads)) {
      conns_.push_back(std::make_unique<TcpConn>());
      if (!conns_.back()->Connect(host_, port_)) {
        *why = "cannot connect to the tcp-peer at " + host_ + ":" + std::to_string(port_);
        conns_.pop_back();
        return false;
      }
    }
    w_ = &w;
    return true;
  }

  double RunOnce() override {
    const Workload &w = *w_;
    const bool write = w.point.op == hixl::WRITE;
    const uint64_t stride = size_ / static_cast<uint64_t>(w.point.threads);
    return RunParallel(w.point.threads, [&](int t) {
      TcpConn &c = *conns_[static_cast<size_t>(t)];
      const uint64_t base = stride * static_cast<uint64_t>(t);
      if (w.point.mode == Mode::kAsync) return c.Move(write, buf_ + base, base, w.slice_bytes);
      uint64_t off = 0;
      for (const Call &call : w.calls[static_cast<size_t>(t)]) {
        const uint64_t n = call.size() * w.point.block;  // every block is the same size
        if (!c.Move(write, buf_ + base + off, base + off, n)) return false;
        off += n;
      }
      return true;
    });
  }

 private:
  std::string host_;
  int port_;
  uint64_t size_;
  char *buf_ = nullptr;
  std::vector<std::unique_ptr<TcpConn>> conns_;
  const Workload *w_ = nullptr;
};

class MemcpyBaseline : public Baseline {
 public:
  MemcpyBaseline(void *local, uint64_t total_size) : local_(local), size_(total_size) {}
  ~MemcpyBaseline() override { FreeBuffer(far_, size_); }

  const char *name() const override { return "memcpy"; }

  bool Prepare(const Workload &w, std::string *why) override {
    if (far_ == nullptr && (far_ = AllocBuffer(size_)) == nullptr) {
      *why = "cannot allocate the memcpy buffer";
      return false;
    }
    // The same descriptors, with our own buffer standing in for the remote.
    if (!BuildWorkload(w.point, size_, reinterpret_cast<uintptr_t>(local_), reinterpret_cast<uintptr_t>(far_),
                       &mine_)) {
      *why = "the point does not fit";
      return false;
    }
    return true;
  }

  double RunOnce() override {
    const bool write = mine_.point.op == hixl::WRITE;
    double t0 = NowSeconds();
    // Single-threaded whatever the point's threads: the yardstick is what
    // one core copies.
    for (const auto &calls : mine_.calls) {
      for (const auto &call : calls) {
        for (const auto &d : call) {
          auto *l = reinterpret_cast<void *>(d.local_addr);
          auto *r = reinterpret_cast<void *>(d.remote_addr);
          std::memcpy(write ? r : l, write ? l : r, d.len);
        }
      }
    }
    return NowSeconds() - t0;
  }

 private:
  void *local_;
  uint64_t size_;
  void *far_ = nullptr;
  Workload mine_;
};

}  // namespace

std::unique_ptr<Baseline> MakeTcpBaseline(const std::string &host, int port, uint64_t total_size) {
  return std::make_unique<TcpBaseline>(host, port, total_size);
}

std::unique_ptr<Baseline> MakeMemcpyBaseline(void *local, uint64_t total_size) {
  return std::make_unique<MemcpyBaseline>(local, total_size);
}

}  // namespace hixl_bench
