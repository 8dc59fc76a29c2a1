// target.cc: a hixl_soak target. It maps its regions at the addresses of
// layout.h, registers them, and until told to quit: deregisters a random
// region now and then and registers it again a little later (churn), and
// checks every second that no byte landed where none may (header, guards).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <map>
#include <random>
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

// DeregisterMem has no timeout: docs/API.md bounds it by 10 s (a same-host
// peer that confirms nothing); RegisterMem and the rest by nothing but
// their own work.
constexpr long long kDeregisterLimitMs = 10000;
constexpr long long kLocalCallLimitMs = 0;

class Target {
 public:
  explicit Target(const Args &a) : a_(a), rng_(a.seed * 1000003 + a.index * 7919 + getpid()) {}

  int Run() {
    if (!MapRegions()) return 1;
    std::string me = "127.0.0.1:" + std::to_string(a_.ports.at(a_.index));
    // With ucx initiators it offers ucx too: by default only a host with an
    // RDMA device does.
    std::map<hixl::AscendString, hixl::AscendString> options;
    if (Asks(a_, "ucx")) {
      options[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] =
          R"({"comm_resource_config.protocol_desc": ["tcp:host", "shm:host", "ucx:host"]})";
    }
    hixl::Status s = hixl::FAILED;
    // The port of our previous life may linger for a moment.
    for (int i = 0; i < 50 && s != hixl::SUCCESS; ++i) {
      CallStart t0;
      s = engine_.Initialize(me.c_str(), options);
      deadlines_.Check("Initialize", t0, kLocalCallLimitMs);
      if (s != hixl::SUCCESS) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (s != hixl::SUCCESS) {
      Say("FAIL target " + std::to_string(a_.index) + ": Initialize(" + me + ") = " + std::to_string(s));
      return 1;
    }
    for (int r = 0; r < kRegions; ++r) Register(r);
    Say("READY " + me);
    std::thread churn([&] { Churn(); });
    std::thread checker([&] { CheckLoop(); });
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line == "PAUSE") {
        bool idle = gate_.Pause(30000);
        // A checkpoint sees every region registered.
        for (int r = 0; r < kRegions; ++r) {
          if (handles_[r] == nullptr) Register(r);
        }
        Say(idle ? "PAUSED" : "FAIL target churn did not pause within 30 s");
      } else if (line == "RESUME") {
        gate_.Resume();
      } else if (line == "QUIT") {
        break;
      }
    }
    gate_.Stop();
    churn.join();
    checker.join();
    CallStart t0;
    engine_.Finalize();
    deadlines_.Check("Finalize", t0, kDeregisterLimitMs);
    CheckMemory();
    Say(Stat());
    return 0;
  }

 private:
  bool MapRegions() {
    std::random_device rd;
    epoch_ = (uint64_t{rd()} << 32) ^ rd() ^ (uint64_t(getpid()) << 20) ^ Clock::now().time_since_epoch().count();
    for (int r = 0; r < kRegions; ++r) {
      void *want = reinterpret_cast<void *>(RegionAddr(a_.index, r));
      // Odd regions live in sealed memfds (as AllocateCache's caches do),
      // which initiators over shm map and copy into with memcpy; the fd
      // stays open for the process's life.
      int fd = -1;
      if (r % 2 == 1) {
        fd = memfd_create("hixl-soak-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || ftruncate(fd, kRegionLen) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
          Say("FAIL target " + std::to_string(a_.index) + ": cannot make a sealed memfd for region " +
              std::to_string(r));
          return false;
        }
      }
      void *p = fd < 0 ? mmap(want, kRegionLen, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
                       : mmap(want, kRegionLen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
      if (p != want) {
        Say("FAIL target " + std::to_string(a_.index) + ": cannot map region " + std::to_string(r) + " at its address");
        return false;
      }
      auto *base = static_cast<uint8_t *>(p);
      std::memcpy(base, &epoch_, sizeof(epoch_));
      hixl_test::FillPattern(base + 8, kHeader - 8, kHeaderSeed, 8);
      for (int o = 0; o < kOwners; ++o) {
        for (int j = 0; j < kSlotsPerOwner; ++j) {
          size_t guard = SlotOffset(o, j) + kSlotData;
          hixl_test::FillPattern(base + guard, kGuard, kGuardSeed, guard);
        }
      }
    }
    return true;
  }

  void Register(int r) {
    hixl::MemDesc d{};
    d.addr = RegionAddr(a_.index, r);
    d.len = kRegionLen;
    CallStart t0;
    hixl::Status s = engine_.RegisterMem(d, hixl::MEM_HOST, handles_[r]);
    deadlines_.Check("RegisterMem", t0, kLocalCallLimitMs);
    if (s != hixl::SUCCESS) Say("FAIL target RegisterMem of region " + std::to_string(r) + " = " + std::to_string(s));
    ++registers_;
  }

  void Deregister(int r) {
    // FAILED: a same-host peer did not confirm in time, the memory may still
    // be written; the call is made again until it is safe.
    for (int i = 0; i < 10; ++i) {
      CallStart t0;
      hixl::Status s = engine_.DeregisterMem(handles_[r]);
      deadlines_.Check("DeregisterMem", t0, kDeregisterLimitMs);
      if (s == hixl::SUCCESS) break;
      ++deregister_failed_;
    }
    handles_[r] = nullptr;
    ++deregisters_;
  }

  // Takes a region away for a while, now and then.
  void Churn() {
    std::uniform_int_distribution<int> gap(200, 800), away(50, 500);
    while (!gate_.stopped()) {
      gate_.Nap(gap(rng_));
      if (!gate_.Enter()) return;
      int r = static_cast<int>(rng_() % kRegions);
      Deregister(r);
      gate_.Nap(away(rng_));
      Register(r);
      gate_.Leave();
    }
  }

  // Checks the memory and reports, every second.
  void CheckLoop() {
    while (!gate_.stopped()) {
      if (a_.self_check) Corrupt();
      CheckMemory();
      Say(Stat());
      for (int i = 0; i < 10 && !gate_.stopped(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // Peers write only the data part of slots: the header and every guard
  // must be as this process made them.
  void CheckMemory() {
    for (int r = 0; r < kRegions; ++r) {
      auto *base = reinterpret_cast<const uint8_t *>(RegionAddr(a_.index, r));
      const std::string where = "FAIL data: target " + std::to_string(a_.index) + " region " + std::to_string(r);
      uint64_t epoch;
      std::memcpy(&epoch, base, sizeof(epoch));
      if (epoch != epoch_ || FirstWrong(base + 8, kHeader - 8, kHeaderSeed, 8) >= 0) {
        Say(where + ": its header was written");
      }
      for (int o = 0; o < kOwners; ++o) {
        for (int j = 0; j < kSlotsPerOwner; ++j) {
          size_t guard = SlotOffset(o, j) + kSlotData;
          if (FirstWrong(base + guard, kGuard, kGuardSeed, guard) >= 0) {
            Say(where + ": the guard after owner " + std::to_string(o) + "'s slot " + std::to_string(j) + " was written");
          }
        }
      }
    }
    ++checks_;
  }

  // --self-check: flips the first byte of every slot of region 0 (the
  // initiators' next READ of one they wrote must see it) and a guard byte.
  void Corrupt() {
    auto *base = reinterpret_cast<uint8_t *>(RegionAddr(a_.index, 0));
    for (int o = 0; o < kOwners; ++o) {
      for (int j = 0; j < kSlotsPerOwner; ++j) base[SlotOffset(o, j)] ^= 0x5a;
    }
    base[SlotOffset(0, 0) + kSlotData] ^= 1;
  }

  static long FirstWrong(const uint8_t *p, size_t len, uint64_t seed, size_t base) {
    for (size_t i = 0; i < len; ++i) {
      if (p[i] != hixl_test::PatternByte(seed, base + i)) return static_cast<long>(i);
    }
    return -1;
  }

  std::string Stat() {
    return "STAT registers=" + std::to_string(registers_.load()) + " deregisters=" +
           std::to_string(deregisters_.load()) + " deregister_failed=" + std::to_string(deregister_failed_.load()) +
           " memory_checks=" + std::to_string(checks_.load()) + " " + deadlines_.Stat();
  }

  const Args a_;
  std::mt19937_64 rng_;  // the churn thread's
  hixl::Hixl engine_;
  uint64_t epoch_ = 0;
  hixl::MemHandle handles_[kRegions] = {};  // the churn thread's, or the main thread's while paused
  Gate gate_;
  Deadlines deadlines_;
  std::atomic<long long> registers_{0}, deregisters_{0}, deregister_failed_{0}, checks_{0};
};

}  // namespace

int RunTarget(const Args &args) { return Target(args).Run(); }

}  // namespace soak
