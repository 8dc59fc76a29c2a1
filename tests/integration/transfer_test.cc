// transfer_test.cc: data integrity of READ and WRITE between two processes.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <random>
#include <thread>

#include "integration/fixture.h"

namespace hixl_test {
namespace {

constexpr size_t kBufLen = 80u << 20;  // room for 64 MiB at a random offset
constexpr uint64_t kRemoteSeed = 7;
constexpr uint64_t kLocalSeed = 11;

class TransferTest : public PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    remote_addr_ = peer_.AllocRegistered(kBufLen, &remote_id_);
    ASSERT_NE(remote_addr_, 0u);
    ASSERT_EQ(peer_.Command("FILL " + std::to_string(remote_id_) + " " + std::to_string(kRemoteSeed)), "OK");
    local_ = std::make_unique<LocalBuffer>(kBufLen);
    FillPattern(local_->data(), kBufLen, kLocalSeed);
    RegisterLocal(*local_);
    // What the remote buffer should hold; WRITEs are applied to it too.
    model_.resize(kBufLen);
    FillPattern(model_.data(), kBufLen, kRemoteSeed);
    ASSERT_EQ(Connect(), hixl::SUCCESS);
  }

  hixl::TransferOpDesc Desc(size_t local_off, size_t remote_off, size_t len) const {
    return {local_->addr() + local_off, remote_addr_ + remote_off, len};
  }

  // Applies a successful WRITE batch to the model.
  void ApplyWrites(const std::vector<hixl::TransferOpDesc> &descs) {
    for (const auto &d : descs) {
      std::memcpy(model_.data() + (d.remote_addr - remote_addr_), reinterpret_cast<void *>(d.local_addr), d.len);
    }
  }

  void ExpectRemoteMatchesModel() {
    EXPECT_EQ(peer_.HashOf(remote_id_, 0, kBufLen), Hash(model_.data(), kBufLen)) << "remote memory differs";
  }

  // After a READ batch, each destination holds the model's bytes.
  void ExpectReadsLanded(const std::vector<hixl::TransferOpDesc> &descs) {
    for (size_t i = 0; i < descs.size(); ++i) {
      const auto &d = descs[i];
      ASSERT_EQ(std::memcmp(reinterpret_cast<void *>(d.local_addr), model_.data() + (d.remote_addr - remote_addr_),
                            d.len),
                0)
          << "descriptor " << i << " of " << descs.size() << " len " << d.len;
    }
  }

  // `count` descriptors with lengths in [1, max_len], each in its own slot
  // of the buffer at a random offset (so destinations never overlap), in
  // shuffled order.
  std::vector<hixl::TransferOpDesc> RandomBatch(size_t count, size_t max_len, std::mt19937_64 &rng) {
    size_t slot = kBufLen / count;
    max_len = std::min(max_len, slot);
    std::vector<size_t> slots(count);
    for (size_t i = 0; i < count; ++i) slots[i] = i;
    std::shuffle(slots.begin(), slots.end(), rng);
    std::vector<size_t> remote_slots = slots;
    std::shuffle(remote_slots.begin(), remote_slots.end(), rng);
    std::vector<hixl::TransferOpDesc> descs;
    for (size_t i = 0; i < count; ++i) {
      size_t len = 1 + rng() % max_len;
      size_t lo = slots[i] * slot + rng() % (slot - len + 1);
      size_t ro = remote_slots[i] * slot + rng() % (slot - len + 1);
      descs.push_back(Desc(lo, ro, len));
    }
    return descs;
  }

  std::unique_ptr<LocalBuffer> local_;
  std::vector<uint8_t> model_;
  uintptr_t remote_addr_ = 0;
  size_t remote_id_ = 0;
};

TEST_P(TransferTest, SingleDescriptorSizesFromOneByteTo64MiB) {
  std::mt19937_64 rng(1);
  const size_t sizes[] = {1, 2, 3, 7, 63, 64, 65, 4095, 4096, 4097, 65549, (1u << 20) - 1, 1u << 20,
                          (4u << 20) + 5, 16u << 20, 64u << 20};
  for (size_t len : sizes) {
    SCOPED_TRACE("len " + std::to_string(len));
    size_t lo = rng() % (kBufLen - len + 1);
    size_t ro = rng() % (kBufLen - len + 1);
    std::vector<hixl::TransferOpDesc> w{Desc(lo, ro, len)};
    ASSERT_EQ(Transfer(hixl::WRITE, w), hixl::SUCCESS);
    ApplyWrites(w);
    ExpectRemoteMatchesModel();

    lo = rng() % (kBufLen - len + 1);
    ro = rng() % (kBufLen - len + 1);
    std::vector<hixl::TransferOpDesc> r{Desc(lo, ro, len)};
    ASSERT_EQ(Transfer(hixl::READ, r), hixl::SUCCESS);
    ExpectReadsLanded(r);
  }
}

TEST_P(TransferTest, BatchesOfOneToTenThousandDescriptors) {
  std::mt19937_64 rng(2);
  const std::pair<size_t, size_t> cases[] = {{1, 4u << 20}, {2, 1u << 20}, {10, 1u << 20}, {100, 256u << 10},
                                             {1000, 16u << 10}, {10000, 4096}};
  for (auto [count, max_len] : cases) {
    SCOPED_TRACE("batch of " + std::to_string(count));
    auto w = RandomBatch(count, max_len, rng);
    ASSERT_EQ(Transfer(hixl::WRITE, w), hixl::SUCCESS);
    ApplyWrites(w);
    ExpectRemoteMatchesModel();
    auto r = RandomBatch(count, max_len, rng);
    ASSERT_EQ(Transfer(hixl::READ, r), hixl::SUCCESS);
    ExpectReadsLanded(r);
  }
}

TEST_P(TransferTest, TinyDescriptorsAdjacentAndScattered) {
  // 10,000 one-byte and 64-byte descriptors; adjacent ones exercise merging.
  std::vector<hixl::TransferOpDesc> w;
  for (size_t i = 0; i < 10000; ++i) w.push_back(Desc(i, 1000 + i, 1));
  for (size_t i = 0; i < 10000; ++i) w.push_back(Desc(20000 + 64 * i, (1u << 20) + 128 * i, 64));
  ASSERT_EQ(Transfer(hixl::WRITE, w), hixl::SUCCESS);
  ApplyWrites(w);
  ExpectRemoteMatchesModel();
  std::vector<hixl::TransferOpDesc> r;
  for (size_t i = 0; i < 10000; ++i) r.push_back(Desc((2u << 20) + 64 * i, (3u << 20) + 7 * i, 64));
  ASSERT_EQ(Transfer(hixl::READ, r), hixl::SUCCESS);
  ExpectReadsLanded(r);
}

TEST_P(TransferTest, OneOutOfRangeDescriptorMovesNothing) {
  std::mt19937_64 rng(3);
  auto batch = RandomBatch(100, 64u << 10, rng);
  const uint64_t before = peer_.HashOf(remote_id_, 0, kBufLen);
  // Straddles the end of the remote region by one byte.
  batch[57] = Desc(0, kBufLen - 100, 101);
  EXPECT_EQ(Transfer(hixl::WRITE, batch), hixl::PARAM_INVALID);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, kBufLen), before);
  // Entirely outside any region.
  batch[57] = {local_->addr(), 0x1000, 16};
  EXPECT_EQ(Transfer(hixl::WRITE, batch), hixl::PARAM_INVALID);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, kBufLen), before);
  // READ: the local buffer stays as it was.
  const uint64_t local_before = Hash(local_->data(), kBufLen);
  EXPECT_EQ(Transfer(hixl::READ, batch), hixl::PARAM_INVALID);
  EXPECT_EQ(Hash(local_->data(), kBufLen), local_before);
  // The link still works afterwards.
  std::vector<hixl::TransferOpDesc> ok{Desc(0, 0, 4096)};
  EXPECT_EQ(Transfer(hixl::WRITE, ok), hixl::SUCCESS);
}

TEST_P(TransferTest, EightThreadsOnOneLink) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 40;
  const size_t slice = kBufLen / kThreads;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (int round = 0; round < kRounds; ++round) {
        size_t len = 1 + rng() % (256u << 10);
        size_t off = t * slice + rng() % (slice / 2 - len);
        // Write a fresh pattern from the first half of our slice, read it
        // back into the second half, compare.
        FillPattern(local_->data() + off, len, 1000 + t * kRounds + round);
        std::vector<hixl::TransferOpDesc> w{Desc(off, off, len)};
        std::vector<hixl::TransferOpDesc> r{Desc(off + slice / 2, off, len)};
        if (Transfer(hixl::WRITE, w) != hixl::SUCCESS || Transfer(hixl::READ, r) != hixl::SUCCESS ||
            std::memcmp(local_->data() + off, local_->data() + off + slice / 2, len) != 0) {
          ++failures[t];
        }
      }
    });
  }
  for (auto &th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST_P(TransferTest, RegionRegisteredAfterConnectIsUsable) {
  size_t id = 0;
  uintptr_t late = peer_.AllocRegistered(1u << 20, &id);
  ASSERT_NE(late, 0u);
  std::vector<hixl::TransferOpDesc> w{{local_->addr() + 5, late + 100, 5000}};
  ASSERT_EQ(Transfer(hixl::WRITE, w), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(id, 100, 5000), Hash(local_->data() + 5, 5000));
}

TEST_P(TransferTest, RegionDeregisteredAtTargetIsRefused) {
  size_t id = 0;
  uintptr_t handle = 0;
  uintptr_t addr = peer_.AllocRegistered(1u << 20, &id, &handle);
  ASSERT_NE(addr, 0u);
  std::vector<hixl::TransferOpDesc> w{{local_->addr(), addr, 4096}};
  ASSERT_EQ(Transfer(hixl::WRITE, w), hixl::SUCCESS);  // our copy of its table now has it
  ASSERT_EQ(peer_.Command("FILL " + std::to_string(id) + " 99"), "OK");
  const uint64_t before = peer_.HashOf(id, 0, 1u << 20);
  ASSERT_EQ(peer_.Command("DEREG " + std::to_string(handle)), "OK");
  EXPECT_EQ(Transfer(hixl::WRITE, w), hixl::PARAM_INVALID);
  EXPECT_EQ(Transfer(hixl::READ, w), hixl::PARAM_INVALID);
  EXPECT_EQ(peer_.HashOf(id, 0, 1u << 20), before);
  // Other regions keep working on the same link.
  std::vector<hixl::TransferOpDesc> ok{Desc(0, 0, 4096)};
  EXPECT_EQ(Transfer(hixl::WRITE, ok), hixl::SUCCESS);
}

TEST_P(TransferTest, ContiguousDescriptorsAcrossTwoAdjacentRemoteRegions) {
  // One allocation registered as two regions that touch.
  auto w = Words(peer_.Command("ALLOC " + std::to_string(2u << 20)));
  ASSERT_EQ(w.size(), 3u);
  size_t id = std::stoul(w[1]);
  uintptr_t base = std::stoull(w[2]);
  ASSERT_EQ(Words(peer_.Command("REG " + w[1] + " 0 " + std::to_string(1u << 20)))[0], "OK");
  ASSERT_EQ(Words(peer_.Command("REG " + w[1] + " " + std::to_string(1u << 20) + " " + std::to_string(1u << 20)))[0],
            "OK");
  FillPattern(local_->data(), 2u << 20, 55);
  // Contiguous on both sides, each inside one region: fine (and never merged
  // into one segment that no single region holds).
  std::vector<hixl::TransferOpDesc> two{{local_->addr(), base, 1u << 20},
                                        {local_->addr() + (1u << 20), base + (1u << 20), 1u << 20}};
  ASSERT_EQ(Transfer(hixl::WRITE, two), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(id, 0, 2u << 20), Hash(local_->data(), 2u << 20));
  // One descriptor across the boundary is inside no single region.
  std::vector<hixl::TransferOpDesc> across{{local_->addr(), base + (1u << 20) - 8, 16}};
  EXPECT_EQ(Transfer(hixl::WRITE, across), hixl::PARAM_INVALID);
}

TEST_P(TransferTest, MemoryTheTargetMayNotWriteOrReadIsRefusedNotFatal) {
  // A target may register read-only memory (a file mapped PROT_READ, to
  // serve READs): a peer's WRITE into it must fail, not fault the target.
  // Three regions of 1 MiB, protected before they are registered (taking
  // access away from registered memory is not allowed: docs/API.md):
  // read-only; PROT_NONE; writable, with a read-only second half.
  const std::string transport = GetParam().transport;
  constexpr size_t kMiB = 1u << 20;
  auto w = Words(peer_.Command("ALLOC " + std::to_string(3 * kMiB)));
  ASSERT_EQ(w.size(), 3u);
  const std::string id = w[1];
  const uintptr_t base = std::stoull(w[2]);
  ASSERT_EQ(peer_.Command("FILL " + id + " 31"), "OK");
  ASSERT_EQ(peer_.Command("PROTECT " + id + " 0 " + std::to_string(kMiB) + " r"), "OK");
  ASSERT_EQ(peer_.Command("PROTECT " + id + " " + std::to_string(kMiB) + " " + std::to_string(kMiB) + " none"), "OK");
  ASSERT_EQ(peer_.Command("PROTECT " + id + " " + std::to_string(5 * kMiB / 2) + " " + std::to_string(kMiB / 2) + " r"),
            "OK");
  for (size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(Words(peer_.Command("REG " + id + " " + std::to_string(r * kMiB) + " " + std::to_string(kMiB)))[0], "OK");
  }
  const uint64_t ro_before = peer_.HashOf(std::stoul(id), 0, kMiB);
  // tcp: the target refuses, nothing moved. shm: our copy fails (EFAULT).
  // ucx: we refuse before posting (UCX's emulated put would write unchecked
  // and fault the target): the region's entry says the target may not write
  // all of it, or it has no UCX key (the target may not read it).
  const hixl::Status refused = transport == "shm" ? hixl::FAILED : hixl::PARAM_INVALID;
  // Small segments (the target copies them with memcpy) and large ones.
  auto batch = [&](uintptr_t remote, size_t seg, size_t n) {
    std::vector<hixl::TransferOpDesc> d;
    for (size_t i = 0; i < n; ++i) d.push_back({local_->addr() + i * 2 * seg, remote + i * 2 * seg, seg});
    return d;
  };
  for (auto [seg, n] : {std::pair<size_t, size_t>{16, 256}, {64, 1}, {64u << 10, 4}}) {
    SCOPED_TRACE("segments of " + std::to_string(seg) + " bytes");
    EXPECT_EQ(Transfer(hixl::WRITE, batch(base, seg, n), 5000), refused) << "WRITE into read-only memory";
    EXPECT_EQ(Transfer(hixl::WRITE, batch(base + kMiB, seg, n), 5000), refused) << "WRITE into PROT_NONE memory";
    EXPECT_EQ(Transfer(hixl::READ, batch(base + kMiB, seg, n), 5000), refused) << "READ from PROT_NONE memory";
    EXPECT_EQ(Transfer(hixl::WRITE, batch(base + 5 * kMiB / 2, seg, n), 5000), refused)
        << "WRITE into the read-only half";
    ASSERT_EQ(Transfer(hixl::READ, batch(base, seg, n)), hixl::SUCCESS) << "READ from read-only memory";
    ASSERT_EQ(Transfer(hixl::READ, batch(base + 2 * kMiB, seg, n)), hixl::SUCCESS) << "READ from the writable half";
    // ucx keys give write access to a region only when all of it was
    // writable at registration (an RDMA registration is all or nothing).
    EXPECT_EQ(Transfer(hixl::WRITE, batch(base + 2 * kMiB, seg, n)), transport == "ucx" ? refused : hixl::SUCCESS)
        << "WRITE into the writable half";
  }
  EXPECT_EQ(peer_.HashOf(std::stoul(id), 0, kMiB), ro_before);
  // The target is alive and serves as before.
  std::vector<hixl::TransferOpDesc> ok{Desc(0, 0, 4096)};
  EXPECT_EQ(Transfer(hixl::WRITE, ok), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 4096), Hash(local_->data(), 4096));
}

TEST_P(TransferTest, AReadIntoReadOnlyLocalMemoryIsRefused) {
  // Registered local memory this process may not write (a read-only mapping
  // is a fine WRITE source): a READ into it is refused before anything
  // moves, instead of faulting this process when the reply arrives.
  constexpr size_t kLen = 1u << 20;
  void *p = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  FillPattern(p, kLen, 3);
  ASSERT_EQ(mprotect(p, kLen, PROT_READ), 0);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  hixl::MemDesc d{};
  d.addr = addr;
  d.len = kLen;
  hixl::MemHandle h = nullptr;
  ASSERT_EQ(engine_.RegisterMem(d, hixl::MEM_HOST, h), hixl::SUCCESS);
  std::vector<hixl::TransferOpDesc> small, large{{addr, remote_addr_, 64u << 10}};
  for (size_t i = 0; i < 256; ++i) small.push_back({addr + i * 32, remote_addr_ + i * 32, 16});
  EXPECT_EQ(Transfer(hixl::READ, small), hixl::PARAM_INVALID);
  EXPECT_EQ(Transfer(hixl::READ, large), hixl::PARAM_INVALID);
  ASSERT_EQ(Transfer(hixl::WRITE, large), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 64u << 10), Hash(p, 64u << 10));
  EXPECT_EQ(engine_.DeregisterMem(h), hixl::SUCCESS);
  munmap(p, kLen);
}

TEST_P(TransferTest, UnregisteredMemoryThatMayNotBeTouchedIsRefused) {
  // Not registered, so copied through the buffer pool (on by default) with
  // memcpy: a READ into read-only memory, or a WRITE from memory that may not
  // be read, would kill this process. Refused before anything moves instead.
  constexpr size_t kLen = 1u << 20;
  void *p = mmap(nullptr, 2 * kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  FillPattern(p, 2 * kLen, 4);
  ASSERT_EQ(mprotect(p, kLen, PROT_READ), 0);                                        // [0, kLen): read-only
  ASSERT_EQ(mprotect(static_cast<char *>(p) + kLen + 4096, 4096, PROT_NONE), 0);  // one page in the second half
  const std::vector<hixl::TransferOpDesc> ro{{addr + 8, remote_addr_, 64}}, rw{{addr + kLen, remote_addr_, 4096}};
  std::vector<hixl::TransferOpDesc> none, none_small;
  for (size_t i = 0; i < 16; ++i) none.push_back({addr + kLen + i * 4096, remote_addr_ + i * 4096, 4096});
  none_small.push_back({addr + kLen + 4096 + 100, remote_addr_, 8});
  const uint64_t before = Hash(p, kLen);
  EXPECT_EQ(Transfer(hixl::READ, ro), hixl::PARAM_INVALID);
  EXPECT_EQ(Transfer(hixl::WRITE, none), hixl::PARAM_INVALID);
  EXPECT_EQ(Transfer(hixl::WRITE, none_small), hixl::PARAM_INVALID);
  EXPECT_EQ(Transfer(hixl::READ, none), hixl::PARAM_INVALID);
  EXPECT_EQ(Hash(p, kLen), before);
  // What may be touched still goes, both ways.
  ASSERT_EQ(Transfer(hixl::WRITE, ro), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 64), Hash(reinterpret_cast<void *>(addr + 8), 64));
  ASSERT_EQ(Transfer(hixl::READ, rw), hixl::SUCCESS);
  EXPECT_EQ(Hash(reinterpret_cast<void *>(addr + kLen), 4096), peer_.HashOf(remote_id_, 0, 4096));
  munmap(p, 2 * kLen);
}

TEST_P(TransferTest, AForkedChildNeitherUsesNorShutsDownItsParentsEngine) {
  // The child has a copy of the engine object but none of its threads:
  // Finalize there joined threads that were not there (a segfault), and
  // calls would wait for I/O threads that never run.
  std::vector<hixl::TransferOpDesc> d{{local_->addr(), remote_addr_, 4096}};
  FillPattern(local_->data(), 4096, 31);
  ASSERT_EQ(Transfer(hixl::WRITE, d), hixl::SUCCESS);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    if (engine_.TransferSync(remote_.c_str(), hixl::WRITE, d, 1000) != hixl::FAILED) code |= 1;
    engine_.Finalize();  // lets go of the parent's engine without touching it
#ifndef __SANITIZE_THREAD__  // TSan ends a child of a threaded process that starts threads
    if (engine_.Initialize("127.0.0.1", {}) != hixl::SUCCESS) code |= 2;  // a new one of its own works
    engine_.Finalize();
#endif
    _exit(code);
  }
  int status = -1;
  for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(10000);  // up to 10 s
  if (status == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "exited " << WIFEXITED(status) << " code " << WEXITSTATUS(status) << " signal " << WTERMSIG(status);
  // The parent's engine and its link are as they were.
  FillPattern(local_->data(), 4096, 32);
  ASSERT_EQ(Transfer(hixl::WRITE, d), hixl::SUCCESS);
  EXPECT_EQ(peer_.HashOf(remote_id_, 0, 4096), Hash(local_->data(), 4096));
}

INSTANTIATE_TEST_SUITE_P(Loopback, TransferTest, AllNets(), NetName);
// The test-only loopback transport (tests/support/loopback_transport): a
// transport added by one folder and one registry line passes the suite.
INSTANTIATE_TEST_SUITE_P(TestTransport, TransferTest, ::testing::Values(Net{false, "loopback"}), NetName);
#ifdef HIXL_TEST_UCX
INSTANTIATE_TEST_SUITE_P(Ucx, TransferTest, UcxNets(), NetName);
#endif

}  // namespace
}  // namespace hixl_test
