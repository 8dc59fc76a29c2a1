// The UCX plug-in through its C ABI, against a peer process that only
// serves (its progress thread alone answers), over UCX's tcp (loopback) and
// shared-memory transports: bytes compared after every transfer.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "support/pattern.h"
#include "ucx/ucx_harness.h"

namespace hixl_test {
namespace {

constexpr size_t kMiB = 1 << 20;

using UcxTransfer = UcxPairTest;

hixl_ucx_piece_t Piece(uint64_t local, uint64_t remote, uint64_t len, hixl_ucx_rkey_t *rkey) {
  return hixl_ucx_piece_t{local, remote, len, rkey};
}

TEST_P(UcxTransfer, WriteAndReadAreByteExactFromOneByteToEightMiB) {
  const size_t region = 8 * kMiB + 64;
  PeerRegion r = Region(region);
  ASSERT_GE(r.id, 0);
  Buffer src(region, 1), back(region, 3);  // neither page- nor word-aligned
  const size_t roff = 5;
  const std::vector<uint8_t> zeros(roff, 0);
  uint64_t seed = 1;
  for (size_t len : {size_t{1}, size_t{2}, size_t{7}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{65541},
                     kMiB + 3, 8 * kMiB}) {
    SCOPED_TRACE("len " + std::to_string(len));
    FillPattern(src.data(), len, ++seed);
    ASSERT_EQ(Run(HIXL_UCX_OP_PUT, {Piece(src.addr(), r.addr + roff, len, r.rkey)}), HIXL_UCX_OK);
    EXPECT_EQ(peer_.process().HashOf(r.id, roff, len), Hash(src.data(), len));
    EXPECT_EQ(peer_.process().HashOf(r.id, 0, roff), Hash(zeros.data(), roff));

    std::memset(back.data(), 0, len + 2);
    ASSERT_EQ(Run(HIXL_UCX_OP_GET, {Piece(back.addr() + 1, r.addr + roff, len, r.rkey)}), HIXL_UCX_OK);
    EXPECT_EQ(std::memcmp(back.data() + 1, src.data(), len), 0);
    EXPECT_EQ(back.data()[0], 0);
    EXPECT_EQ(back.data()[len + 1], 0);
  }
}

TEST_P(UcxTransfer, AnIdleTargetServesWritesAndReads) {
  // After it registered, the peer gets no command until the end: its main
  // thread waits on stdin, only the plug-in's progress thread runs there.
  PeerRegion r = Region(2 * kMiB);
  ASSERT_GE(r.id, 0);
  Buffer src(2 * kMiB), back(2 * kMiB);
  for (int round = 0; round < 5; ++round) {
    FillPattern(src.data(), src.size(), 100 + round);
    ASSERT_EQ(Run(HIXL_UCX_OP_PUT, {Piece(src.addr(), r.addr, src.size(), r.rkey)}), HIXL_UCX_OK);
    ASSERT_EQ(Run(HIXL_UCX_OP_GET, {Piece(back.addr(), r.addr, back.size(), r.rkey)}), HIXL_UCX_OK);
    ASSERT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0) << "round " << round;
  }
  EXPECT_EQ(peer_.process().HashOf(r.id, 0, src.size()), Hash(src.data(), src.size()));
}

TEST_P(UcxTransfer, MemoryMappedForRemoteReadsOnlyServesGets) {
  // Memory a process may only read is mapped with remote read access alone
  // (UCP_MEM_MAP_PROT_*: an RDMA NIC refuses puts with its key); here, over
  // UCX's tcp and shared memory, that mapping and its key serve gets.
  const size_t len = kMiB + 11;
  PeerRegion r = Region(len, /*read_only=*/true);
  ASSERT_GE(r.id, 0);
  ASSERT_NE(r.rkey, nullptr);
  ASSERT_EQ(peer_.process().Command("FILL " + std::to_string(r.id) + " 77"), "OK");
  Buffer back(len, 1);
  ASSERT_EQ(Run(HIXL_UCX_OP_GET, {Piece(back.addr(), r.addr, len, r.rkey)}), HIXL_UCX_OK);
  EXPECT_EQ(Hash(back.data(), len), peer_.process().HashOf(r.id, 0, len));
  // And here: read-only pages register for reading; access without READ,
  // or with unknown bits, is refused.
  const long page = sysconf(_SC_PAGESIZE);
  void *ro = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(ro, MAP_FAILED);
  hixl_ucx_mem_t *mem = nullptr;
  EXPECT_EQ(api_->mem_register(ctx_.get(), ro, page, HIXL_UCX_MEM_HOST, HIXL_UCX_REMOTE_READ, &mem), HIXL_UCX_OK);
  if (mem != nullptr) {
    EXPECT_EQ(api_->mem_deregister(mem), HIXL_UCX_OK);
  }
  mem = nullptr;
  EXPECT_EQ(api_->mem_register(ctx_.get(), ro, page, HIXL_UCX_MEM_HOST, HIXL_UCX_REMOTE_WRITE, &mem),
            HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(api_->mem_register(ctx_.get(), ro, page, HIXL_UCX_MEM_HOST, 4u | HIXL_UCX_REMOTE_READ, &mem),
            HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(mem, nullptr);
  munmap(ro, page);
}

TEST_P(UcxTransfer, OneBatchSpansManyRegions) {
  constexpr int kRegions = 64, kPerRegion = 4;
  constexpr size_t kPiece = 1000;
  std::vector<PeerRegion> regions;
  for (int r = 0; r < kRegions; ++r) {
    regions.push_back(Region(64 * 1024 + 123 * r));
    ASSERT_GE(regions.back().id, 0);
  }
  Buffer src(kRegions * kPerRegion * kPiece, 7), back(kRegions * kPerRegion * kPiece, 9);
  FillPattern(src.data(), src.size(), 42);
  std::vector<hixl_ucx_piece_t> writes, reads;
  for (int r = 0; r < kRegions; ++r) {
    for (int k = 0; k < kPerRegion; ++k) {
      size_t at = (r * kPerRegion + k) * kPiece;
      uint64_t remote = regions[r].addr + 13 + k * 9000;  // gaps: nothing merges
      writes.push_back(Piece(src.addr() + at, remote, kPiece, regions[r].rkey));
      reads.push_back(Piece(back.addr() + at, remote, kPiece, regions[r].rkey));
    }
  }
  ASSERT_EQ(Run(HIXL_UCX_OP_PUT, writes), HIXL_UCX_OK);
  for (int r = 0; r < kRegions; r += 7) {
    for (int k = 0; k < kPerRegion; ++k) {
      size_t at = (r * kPerRegion + k) * kPiece;
      EXPECT_EQ(peer_.process().HashOf(regions[r].id, 13 + k * 9000, kPiece), Hash(src.data() + at, kPiece));
    }
  }
  ASSERT_EQ(Run(HIXL_UCX_OP_GET, reads), HIXL_UCX_OK);
  EXPECT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0);
  EXPECT_EQ(Stats().ops, 2u * kRegions * kPerRegion);
}

TEST_P(UcxTransfer, TenThousandPiecesInOneBatchMergedWhereContiguous) {
  constexpr size_t kPieces = 10000, kPiece = 4096, kStride = kPiece + 64;
  PeerRegion r = Region(kPieces * kStride);
  ASSERT_GE(r.id, 0);
  Buffer src(kPieces * kPiece), back(kPieces * kPiece);
  FillPattern(src.data(), src.size(), 5);

  // Contiguous here, 64-byte gaps there: 10,000 puts.
  std::vector<hixl_ucx_piece_t> scattered, gather;
  std::vector<uint8_t> image(kPieces * kStride, 0);
  for (size_t i = 0; i < kPieces; ++i) {
    scattered.push_back(Piece(src.addr() + i * kPiece, r.addr + i * kStride, kPiece, r.rkey));
    gather.push_back(Piece(back.addr() + i * kPiece, r.addr + i * kStride, kPiece, r.rkey));
    std::memcpy(image.data() + i * kStride, src.data() + i * kPiece, kPiece);
  }
  hixl_ucx_ep_stats_t before = Stats();
  ASSERT_EQ(Run(HIXL_UCX_OP_PUT, scattered), HIXL_UCX_OK);
  hixl_ucx_ep_stats_t after = Stats();
  EXPECT_EQ(after.pieces - before.pieces, kPieces);
  EXPECT_EQ(after.ops - before.ops, kPieces);
  RecordProperty("post_ns_10000x4KiB", std::to_string(after.last_post_ns));
  EXPECT_EQ(peer_.process().HashOf(r.id, 0, image.size()), Hash(image.data(), image.size()));
  ASSERT_EQ(Run(HIXL_UCX_OP_GET, gather), HIXL_UCX_OK);
  EXPECT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0);

  // Contiguous on both sides: one put.
  std::vector<hixl_ucx_piece_t> run;
  for (size_t i = 0; i < kPieces; ++i) {
    run.push_back(Piece(src.addr() + i * kPiece, r.addr + i * kPiece, kPiece, r.rkey));
  }
  before = Stats();
  ASSERT_EQ(Run(HIXL_UCX_OP_PUT, run), HIXL_UCX_OK);
  after = Stats();
  EXPECT_EQ(after.pieces - before.pieces, kPieces);
  EXPECT_EQ(after.ops - before.ops, 1u);
  EXPECT_EQ(peer_.process().HashOf(r.id, 0, src.size()), Hash(src.data(), src.size()));
}

// Posts the next batch from the callback of the one before.
struct Chain {
  Chain(const hixl_ucx_api_t *a, hixl_ucx_ep_t *e, hixl_ucx_piece_t p, int n) : api(a), ep(e), piece(p), left(n) {}
  const hixl_ucx_api_t *api;
  hixl_ucx_ep_t *ep;
  hixl_ucx_piece_t piece;
  int left;  // progress thread only, after the first post
  hixl_ucx_status_t describe_status = HIXL_UCX_OK;
  hixl_ucx_status_t stats_status = HIXL_UCX_ERR_INTERNAL;
  BatchWait last;

  static void OnDone(void *self, hixl_ucx_status_t status) {
    auto *c = static_cast<Chain *>(self);
    if (status != HIXL_UCX_OK || --c->left == 0) {
      BatchWait::OnDone(&c->last, status);
      return;
    }
    if (c->left == 50) {
      char text[64];
      c->describe_status = c->api->ep_describe(c->ep, text, sizeof(text));  // would wait: refused
    }
    hixl_ucx_ep_stats_t stats;
    c->stats_status = c->api->ep_stats(c->ep, &stats);  // only reads: allowed
    c->piece.local_addr += 1;
    hixl_ucx_status_t st = c->api->batch_post(c->ep, HIXL_UCX_OP_PUT, &c->piece, 1, OnDone, c);
    if (st != HIXL_UCX_OK) BatchWait::OnDone(&c->last, st);
  }
};

TEST_P(UcxTransfer, ACallbackMayPostTheNextBatchButNotWait) {
  PeerRegion r = Region(4096);
  ASSERT_GE(r.id, 0);
  Buffer src(4096 + 100);
  FillPattern(src.data(), src.size(), 9);
  Chain chain(api_, ep_, Piece(src.addr(), r.addr, 4096, r.rkey), 100);
  ASSERT_EQ(api_->batch_post(ep_, HIXL_UCX_OP_PUT, &chain.piece, 1, Chain::OnDone, &chain), HIXL_UCX_OK);
  bool done = chain.last.Wait(60000);
  if (!done) {  // cut the chain before it goes out of scope
    api_->ep_destroy(ep_, 0);
    ep_ = nullptr;
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(chain.last.status(), HIXL_UCX_OK);
  EXPECT_EQ(chain.describe_status, HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(chain.stats_status, HIXL_UCX_OK);
  EXPECT_EQ(Stats().batches, 100u);
  EXPECT_EQ(peer_.process().HashOf(r.id, 0, 4096), Hash(src.data() + 99, 4096));  // the 100th batch's bytes
}

TEST_P(UcxTransfer, TheEndpointNamesItsTransport) {
  char text[512];
  ASSERT_EQ(api_->ep_describe(ep_, text, sizeof(text)), HIXL_UCX_OK);
  std::string s = text;
  if (GetParam() == "tcp") {
    EXPECT_NE(s.find("tcp"), std::string::npos) << s;
  } else {
    EXPECT_TRUE(s.find("sysv") != std::string::npos || s.find("posix") != std::string::npos) << s;
  }
  char tiny[4];
  ASSERT_EQ(api_->ep_describe(ep_, tiny, sizeof(tiny)), HIXL_UCX_OK);
  EXPECT_EQ(std::string(tiny), s.substr(0, 3));
}

TEST_P(UcxTransfer, AKeyDroppedWhileABatchUsesItLastsUntilTheBatchEnds) {
  PeerRegion r = Region(4 * kMiB);
  ASSERT_GE(r.id, 0);
  Buffer src(4 * kMiB);
  BatchWait &wait = PostWrite(r, src, 77);
  EXPECT_EQ(api_->rkey_destroy(r.rkey), HIXL_UCX_OK);
  ASSERT_TRUE(wait.Wait(60000));
  EXPECT_EQ(wait.status(), HIXL_UCX_OK);
  EXPECT_EQ(peer_.process().HashOf(r.id, 0, src.size()), Hash(src.data(), src.size()));
}

TEST_P(UcxTransfer, BadBatchesAreRefusedAndNeverCalledBack) {
  uintptr_t raddr = 0;
  std::vector<uint8_t> packed;
  ASSERT_GE(peer_.AllocRegistered(4096, &raddr, &packed), 0);
  hixl_ucx_rkey_t *rkey = Unpack(packed);
  hixl_ucx_ep_t *other = nullptr;
  ASSERT_EQ(api_->ep_create(ctx_.get(), peer_.address.data(), peer_.address.size(), nullptr, nullptr, &other),
            HIXL_UCX_OK);
  hixl_ucx_rkey_t *other_key = Unpack(packed, other);
  Buffer buf(4096);
  BatchWait wait;
  auto post = [&](hixl_ucx_op_t op, hixl_ucx_piece_t p, hixl_ucx_batch_cb cb) {
    return api_->batch_post(ep_, op, &p, 1, cb, &wait);
  };
  EXPECT_EQ(post(HIXL_UCX_OP_PUT, Piece(buf.addr(), raddr, 0, rkey), BatchWait::OnDone), HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(post(HIXL_UCX_OP_PUT, Piece(UINT64_MAX - 10, raddr, 100, rkey), BatchWait::OnDone), HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(post(HIXL_UCX_OP_GET, Piece(buf.addr(), UINT64_MAX - 10, 100, rkey), BatchWait::OnDone),
            HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(post(HIXL_UCX_OP_PUT, Piece(buf.addr(), raddr, 100, nullptr), BatchWait::OnDone), HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(post(HIXL_UCX_OP_PUT, Piece(buf.addr(), raddr, 100, other_key), BatchWait::OnDone), HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(post(static_cast<hixl_ucx_op_t>(7), Piece(buf.addr(), raddr, 100, rkey), BatchWait::OnDone),
            HIXL_UCX_ERR_INVALID);
  EXPECT_EQ(post(HIXL_UCX_OP_PUT, Piece(buf.addr(), raddr, 100, rkey), nullptr), HIXL_UCX_ERR_INVALID);
  // A good batch after them: callbacks run in order, so any for a refused
  // one would have come by the time this one's has.
  ASSERT_EQ(Run(HIXL_UCX_OP_PUT, {Piece(buf.addr(), raddr, 4096, rkey)}), HIXL_UCX_OK);
  EXPECT_EQ(wait.calls(), 0);
  EXPECT_EQ(api_->ep_destroy(other, 1000), HIXL_UCX_OK);
}

TEST_P(UcxTransfer, DestroyWithAFlushTimeoutLetsBatchesInFlightFinish) {
  PeerRegion r = Region(8 * kMiB);
  ASSERT_GE(r.id, 0);
  Buffer src(8 * kMiB);
  BatchWait &wait = PostWrite(r, src, 3);
  EXPECT_EQ(api_->ep_destroy(ep_, 60000), HIXL_UCX_OK);
  ep_ = nullptr;
  EXPECT_TRUE(wait.done());  // before ep_destroy returned
  EXPECT_EQ(wait.status(), HIXL_UCX_OK);
  EXPECT_EQ(peer_.process().HashOf(r.id, 0, src.size()), Hash(src.data(), src.size()));
}

TEST_P(UcxTransfer, AnEmptyBatchCompletes) {
  ASSERT_EQ(Run(HIXL_UCX_OP_GET, {}), HIXL_UCX_OK);
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxTransfer, ::testing::Values("tcp", "sm"),
                         [](const ::testing::TestParamInfo<std::string> &i) { return i.param; });

}  // namespace
}  // namespace hixl_test
