// initiator.cc: a hixl_soak initiator. kWorkers threads each own slots in
// every region of every target (layout.h). A step READs one slot back, with
// the target's epoch in the same batch, and checks it against what the
// worker last wrote there; then WRITEs it anew. Batches are scattered
// (up to 8 pieces, shuffled, some from registered memory, some relayed),
// sync or async, with timeouts from 10 ms to 2 s. Beside them a thread
// drops links: Disconnect, or the link's sockets killed (ss -K).
//
// What a slot holds is known only while nothing can land there unseen:
// - a checked READ needs the epoch the WRITE was made under (a target that
//   was restarted meanwhile has fresh memory);
// - a WRITE that ended TIMEOUT or FAILED may still land, and is only known
//   to land before a later WRITE on the same link: the slot is tainted
//   until a WRITE into it succeeds, and no link with a tainted slot is
//   dropped on purpose (a new link would not be ordered after the old);
// - a WRITE that ended PARAM_INVALID moved nothing: the slot keeps what it
//   held, and the next READ checks that promise.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "hixl/hixl.h"
#include "soak/child.h"
#include "soak/layout.h"
#include "soak/soak.h"
#include "support/pattern.h"

namespace soak {
namespace {

constexpr int kAsyncTimeoutMs = 2000;
// A call with no timeout of its own: docs/API.md bounds DeregisterMem and
// Finalize by 10 s (a peer that confirms nothing); the rest only by their
// own work, and a TransferAsync call by 1 s per wait it may do (connect,
// fetch the region table again).
constexpr long long kDeregisterLimitMs = 10000;
constexpr long long kTransferAsyncLimitMs = 2000;
// Per Args::transports: tcp only; the default (shm to these same-host
// targets); ucx only.
const char kConfigTcp[] =
    R"({"comm_resource_config.protocol_desc": ["tcp:host"], "async_transfer.timeout_ms": 2000, "heartbeat.interval_ms": 2000})";
const char kConfigAny[] = R"({"async_transfer.timeout_ms": 2000, "heartbeat.interval_ms": 2000})";
const char kConfigUcx[] =
    R"({"comm_resource_config.protocol_desc": ["ucx:host"], "async_transfer.timeout_ms": 2000, "heartbeat.interval_ms": 2000})";

// What a worker knows of one of its slots.
struct Slot {
  bool known = false;  // holds `len` bytes of `seed`'s pattern, in its target's life `epoch`
  uint64_t epoch = 0;
  uint64_t seed = 0;
  size_t len = 0;
  bool tainted = false;  // a WRITE into it failed and may still land
};

// A piece of a batch: `len` bytes at `off`, both in the slot and in the
// worker's buffer `buf` (0: registered, unless churned away; 1: never).
struct Piece {
  size_t off, len;
  int buf;
};

struct Worker {
  int id = 0;
  int owner = 0;
  std::mt19937_64 rng;
  uint8_t *buf[2] = {nullptr, nullptr};
  hixl::MemHandle handle = nullptr;  // buf[0]'s, or null while it is not registered
  uint64_t seeds = 0;
  std::vector<Slot> slots;  // [target][region][slot]
};

class Initiator {
 public:
  explicit Initiator(const Args &a) : a_(a) {
    for (size_t t = 0; t < a_.ports.size(); ++t) names_.push_back("127.0.0.1:" + std::to_string(a_.ports[t]));
  }

  int Run() {
    ip_ = "127.0.0." + std::to_string(10 + a_.index);  // its own: ss -K can tell its links apart
    const std::string &kind = TransportOf(a_, a_.index);
    std::map<hixl::AscendString, hixl::AscendString> options{
        {hixl::OPTION_AUTO_CONNECT, "1"},
        {hixl::OPTION_GLOBAL_RESOURCE_CONFIG, kind == "tcp" ? kConfigTcp : kind == "ucx" ? kConfigUcx : kConfigAny}};
    CallStart t0;
    hixl::Status s = engine_.Initialize(ip_.c_str(), options);
    deadlines_.Check("Initialize", t0, 0);
    if (s != hixl::SUCCESS) {
      Say("FAIL initiator " + std::to_string(a_.index) + ": Initialize = " + std::to_string(s));
      return 1;
    }
    std::vector<Worker> workers(kWorkers);
    for (int w = 0; w < kWorkers; ++w) {
      Worker &k = workers[w];
      k.id = w;
      k.owner = Owner(a_.index, a_.incarnation, w);
      k.rng.seed(a_.seed * 1000003 + a_.index * 7919 + a_.incarnation * 104729 + w);
      for (uint8_t *&b : k.buf) {
        void *p = mmap(nullptr, kSlot + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
          Say("FAIL initiator " + std::to_string(a_.index) + ": out of memory");
          return 1;
        }
        b = static_cast<uint8_t *>(p);
      }
      k.slots.resize(names_.size() * kRegions * kSlotsPerOwner);
      RegisterLocal(k);
    }
    Say("READY " + ip_);
    std::vector<std::thread> threads;
    for (auto &k : workers) threads.emplace_back([&] { WorkLoop(k); });
    threads.emplace_back([&] { DropLoop(); });
    threads.emplace_back([&] {
      while (!gate_.stopped()) {
        CheckTransports(kind);
        Say(Stat());
        for (int i = 0; i < 10 && !gate_.stopped(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line == "PAUSE") {
        Say(gate_.Pause(30000) ? "PAUSED" : "FAIL initiator work did not pause within 30 s");
      } else if (line == "SYNC") {
        Say("SYNCED " + std::to_string(Sync()));
      } else if (line == "RESUME") {
        gate_.Resume();
      } else if (line == "QUIT") {
        break;
      }
    }
    gate_.Stop();
    for (auto &t : threads) t.join();
    t0 = CallStart();
    engine_.Finalize();
    deadlines_.Check("Finalize", t0, kDeregisterLimitMs);
    Say(Stat());
    return 0;
  }

 private:
  void RegisterLocal(Worker &k) {
    hixl::MemDesc d{};
    d.addr = reinterpret_cast<uintptr_t>(k.buf[0]);
    d.len = kSlot;
    CallStart t0;
    hixl::Status s = engine_.RegisterMem(d, hixl::MEM_HOST, k.handle);
    deadlines_.Check("RegisterMem", t0, 0);
    if (s != hixl::SUCCESS) {
      Say("FAIL initiator RegisterMem = " + std::to_string(s));
      k.handle = nullptr;
    }
  }

  void WorkLoop(Worker &k) {
    while (gate_.Enter()) {
      Step(k);
      // Now and then the registered buffer goes, or comes back: meanwhile
      // its pieces are relayed through the buffer pool.
      if (k.rng() % 64 == 0) {
        if (k.handle != nullptr) {
          CallStart t0;
          hixl::Status s = engine_.DeregisterMem(k.handle);
          deadlines_.Check("DeregisterMem", t0, kDeregisterLimitMs);
          if (s == hixl::SUCCESS) k.handle = nullptr;
        } else {
          RegisterLocal(k);
        }
      }
      gate_.Leave();
    }
  }

  static size_t Length(std::mt19937_64 &rng) {
    switch (rng() % 10) {
      case 0: case 1: case 2: case 3: case 4: return 1 + rng() % 4096;
      case 5: case 6: case 7: return 1 + rng() % (64 << 10);
      default: return 1 + rng() % kSlotData;
    }
  }

  static std::vector<Piece> Split(size_t len, std::mt19937_64 &rng) {
    std::vector<size_t> cuts = {0, len};
    for (size_t i = 1 + rng() % 8; i > 1 && len > 1; --i) cuts.push_back(1 + rng() % (len - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<Piece> out;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) out.push_back({cuts[i], cuts[i + 1] - cuts[i], int(rng() % 2)});
    return out;
  }

  static std::vector<hixl::TransferOpDesc> Descs(const Worker &k, const std::vector<Piece> &pieces, uintptr_t slot) {
    std::vector<hixl::TransferOpDesc> d;
    for (const Piece &p : pieces) d.push_back({reinterpret_cast<uintptr_t>(k.buf[p.buf] + p.off), slot + p.off, p.len});
    return d;
  }

  void Step(Worker &k) {
    const int t = static_cast<int>(k.rng() % names_.size());
    const int r = static_cast<int>(k.rng() % kRegions);
    const int j = static_cast<int>(k.rng() % kSlotsPerOwner);
    Slot &m = k.slots[(t * kRegions + r) * kSlotsPerOwner + j];
    const uintptr_t region = RegionAddr(t, r);
    const uintptr_t slot = region + SlotOffset(k.owner, j);
    std::shared_lock<std::shared_timed_mutex> link(link_mu_[t]);

    // READ it back, the target's epoch in the same batch.
    std::vector<Piece> pieces = Split(m.known ? m.len : Length(k.rng), k.rng);
    std::memset(k.buf[0], 0xA5, kSlot);
    std::memset(k.buf[1], 0xA5, kSlot);
    auto *epoch = reinterpret_cast<uint64_t *>(k.buf[1] + kSlot);
    *epoch = 0;
    std::vector<hixl::TransferOpDesc> d = Descs(k, pieces, slot);
    d.insert(d.begin() + static_cast<long>(k.rng() % (d.size() + 1)), {reinterpret_cast<uintptr_t>(epoch), region, 8});
    hixl::Status s = Transfer(k, t, hixl::READ, d);
    const bool epoch_known = s == hixl::SUCCESS;
    const uint64_t e = *epoch;
    if (s == hixl::SUCCESS) {
      if (m.known && m.epoch == e) {
        Verify(k, m, pieces, t, r, j);
      } else {
        ++unverified_;
      }
      if (m.epoch != e) m.known = false;
      m.epoch = e;
    }

    // WRITE it anew.
    const uint64_t seed = (uint64_t(a_.index) << 56) ^ (uint64_t(a_.incarnation) << 40) ^ (uint64_t(k.id) << 36) ^ ++k.seeds;
    pieces = Split(Length(k.rng), k.rng);
    for (const Piece &p : pieces) hixl_test::FillPattern(k.buf[p.buf] + p.off, p.len, seed, p.off);
    s = Transfer(k, t, hixl::WRITE, Descs(k, pieces, slot));
    if (s == hixl::SUCCESS) {
      m.known = epoch_known;
      m.epoch = e;
      m.seed = seed;
      m.len = pieces.back().off + pieces.back().len;
      if (m.tainted) --taints_[t];
      m.tainted = false;
    } else if (s != hixl::PARAM_INVALID) {
      m.known = false;
      if (!m.tainted) ++taints_[t];
      m.tainted = true;
    }
  }

  void Verify(Worker &k, Slot &m, const std::vector<Piece> &pieces, int t, int r, int j) {
    size_t wrong = 0, first = 0;
    for (const Piece &p : pieces) {
      for (size_t i = p.off; i < p.off + p.len; ++i) {
        if (k.buf[p.buf][i] != hixl_test::PatternByte(m.seed, i) && wrong++ == 0) first = i;
      }
    }
    ++verified_;
    verified_bytes_ += m.len;
    if (wrong == 0) return;
    Say("FAIL data: initiator " + std::to_string(a_.index) + " worker " + std::to_string(k.id) + ": target " +
        std::to_string(t) + " region " + std::to_string(r) + " slot " + std::to_string(j) + ": " +
        std::to_string(wrong) + " of " + std::to_string(m.len) + " bytes wrong, the first at " + std::to_string(first));
    m.known = false;
  }

  hixl::Status Transfer(Worker &k, int t, hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &d) {
    static const int kTimeouts[] = {10, 100, 500, 2000};
    hixl::Status s = hixl::SUCCESS;
    if (k.rng() % 3 == 0) {
      s = TransferAsync(t, op, d);
    } else {
      const int timeout = kTimeouts[k.rng() % 4];
      CallStart t0;
      s = engine_.TransferSync(names_[t].c_str(), op, d, timeout);
      deadlines_.Check("TransferSync", t0, timeout);
    }
    ++(s == hixl::SUCCESS ? ok_ : s == hixl::TIMEOUT ? timeout_ : s == hixl::FAILED ? failed_
       : s == hixl::PARAM_INVALID ? invalid_ : other_);
    return s;
  }

  hixl::Status TransferAsync(int t, hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &d) {
    hixl::TransferReq req = nullptr;
    const CallStart t0;
    hixl::Status s = engine_.TransferAsync(names_[t].c_str(), op, d, hixl::TransferArgs{}, req);
    deadlines_.Check("TransferAsync", t0, kTransferAsyncLimitMs);
    if (s != hixl::SUCCESS) return s;
    while (MsSince(t0.at) < kAsyncTimeoutMs + 10000) {
      hixl::TransferStatus st = hixl::TransferStatus::WAITING;
      CallStart c0;
      s = engine_.GetTransferStatus(req, st);
      deadlines_.Check("GetTransferStatus", c0, 0);
      if (s != hixl::SUCCESS) {
        Say("FAIL initiator: GetTransferStatus of a request not yet reported = " + std::to_string(s));
        return s;
      }
      if (st != hixl::TransferStatus::WAITING) {
        deadlines_.Check("an async request", t0, kAsyncTimeoutMs);
        return st == hixl::TransferStatus::COMPLETED ? hixl::SUCCESS
               : st == hixl::TransferStatus::TIMEOUT ? hixl::TIMEOUT
                                                      : hixl::FAILED;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    Say("FAIL deadline: an async request still WAITING " + std::to_string(MsSince(t0.at)) + " ms after it was made");
    return hixl::FAILED;
  }

  // Drops a link now and then, when no slot of its target is tainted (with
  // no transfer on it meanwhile).
  void DropLoop() {
    std::mt19937_64 rng(a_.seed * 31 + a_.index * 17 + a_.incarnation);
    while (!gate_.stopped()) {
      gate_.Nap(1000 + static_cast<int>(rng() % 2000));
      if (!gate_.Enter()) return;
      const int t = static_cast<int>(rng() % names_.size());
      std::unique_lock<std::shared_timed_mutex> link(link_mu_[t], std::defer_lock);
      if (!link.try_lock_for(std::chrono::seconds(3)) || taints_[t] > 0) {
        ++drops_skipped_;
      } else if (rng() % 2 == 0) {
        CallStart t0;
        hixl::Status s = engine_.Disconnect(names_[t].c_str(), 1000);
        deadlines_.Check("Disconnect", t0, 1000);
        if (s == hixl::SUCCESS) ++disconnects_;
      } else {
        std::string cmd = "ss -K -t -n src " + ip_ + " dst 127.0.0.1 dport = :" + std::to_string(a_.ports[t]) +
                          " >/dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) ++kills_;
      }
      if (link.owns_lock()) link.unlock();
      gate_.Leave();
    }
  }

  // At a checkpoint: makes a link to every target. Returns how many it reached.
  int Sync() {
    int reached = 0;
    uint64_t epoch = 0;
    for (size_t t = 0; t < names_.size(); ++t) {
      std::vector<hixl::TransferOpDesc> d = {{reinterpret_cast<uintptr_t>(&epoch), RegionAddr(int(t), 0), 8}};
      CallStart t0;
      hixl::Status s = hixl::FAILED;
      for (int i = 0; i < 100 && s != hixl::SUCCESS && MsSince(t0.at) < 10000; ++i) {
        CallStart c0;
        s = engine_.TransferSync(names_[t].c_str(), hixl::READ, d, 1000);
        deadlines_.Check("TransferSync", c0, 1000);
      }
      if (s == hixl::SUCCESS) ++reached;
    }
    return reached;
  }

  // Each live link is on a transport its protocol_desc allows: tcp or
  // ucx alone when that is all it names. Counted per look, per target.
  void CheckTransports(const std::string &kind) {
    for (const std::string &name : names_) {
      hixl::AscendString on;
      if (engine_.GetLinkTransport(name.c_str(), on) != hixl::SUCCESS) continue;
      const std::string t = on.GetString();
      ++(t == "tcp" ? on_tcp_ : t == "shm" ? on_shm_ : t == "ucx" ? on_ucx_ : on_other_);
      if ((kind == "tcp" || kind == "ucx") && t != kind) {
        Say("FAIL initiator " + std::to_string(a_.index) + " (" + kind + " only): its link to " + name + " is on " + t);
      }
    }
  }

  std::string Stat() {
    return "STAT ok=" + std::to_string(ok_.load()) + " timeout=" + std::to_string(timeout_.load()) +
           " failed=" + std::to_string(failed_.load()) + " invalid=" + std::to_string(invalid_.load()) +
           " other=" + std::to_string(other_.load()) + " verified=" + std::to_string(verified_.load()) +
           " verified_bytes=" + std::to_string(verified_bytes_.load()) + " unverified=" +
           std::to_string(unverified_.load()) + " disconnects=" + std::to_string(disconnects_.load()) +
           " kills=" + std::to_string(kills_.load()) + " drops_skipped=" + std::to_string(drops_skipped_.load()) +
           " on_tcp=" + std::to_string(on_tcp_.load()) + " on_shm=" + std::to_string(on_shm_.load()) +
           " on_ucx=" + std::to_string(on_ucx_.load()) + " on_other=" + std::to_string(on_other_.load()) +
           " " + deadlines_.Stat();
  }

  const Args a_;
  std::vector<std::string> names_;  // the targets'
  std::string ip_;
  hixl::Hixl engine_;
  Gate gate_;
  Deadlines deadlines_;
  // Workers hold their target's shared while they move bytes; DropLoop
  // holds it exclusive while it drops the link.
  std::shared_timed_mutex link_mu_[kMaxTargets];
  std::atomic<int> taints_[kMaxTargets] = {};  // tainted slots per target, over all workers
  std::atomic<long long> ok_{0}, timeout_{0}, failed_{0}, invalid_{0}, other_{0};
  std::atomic<long long> verified_{0}, verified_bytes_{0}, unverified_{0};
  std::atomic<long long> disconnects_{0}, kills_{0}, drops_skipped_{0};
  // Looks at a live link that found it on each transport (CheckTransports).
  std::atomic<long long> on_tcp_{0}, on_shm_{0}, on_ucx_{0}, on_other_{0};
};

}  // namespace

int RunInitiator(const Args &args) { return Initiator(args).Run(); }

}  // namespace soak
