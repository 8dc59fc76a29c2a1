// descriptor_bench: what each descriptor of a batch costs before a byte
// moves: the checks against the local and remote region tables
// (BatchCheck, as TransferSync runs them) and cutting the batch into TCP
// frames (PlanFrames). Compare the time per descriptor with the time its
// bytes take on the wire (64 B at 3 GB/s: about 21 ns).
//
//   ./build/tools/microbench/descriptor_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "engine/batch_check.h"
#include "memory/host/page_access.h"
#include "memory/registry.h"
#include "memory/remote_regions.h"
#include "transport/tcp/frame_planner.h"

namespace hixl {
namespace {

constexpr uintptr_t kRemoteBase = 0x7f0000000000;

struct Fixture {
  explicit Fixture(size_t count, size_t len) : local(count * len * 2) {
    MemHandle h;
    registry.Register(reinterpret_cast<uintptr_t>(local.data()), local.size(), &h);
    wire::RegionEntry entry;
    entry.range = {kRemoteBase, local.size()};
    remote.Replace({entry});
    // Every other slot: no two descriptors are contiguous, nothing merges.
    for (size_t i = 0; i < count; ++i) {
      descs.push_back({reinterpret_cast<uintptr_t>(local.data()) + 2 * i * len, kRemoteBase + 2 * i * len, len});
    }
  }
  std::vector<uint8_t> local;
  Registry registry{65536};
  RemoteRegions remote;
  std::vector<TransferOpDesc> descs;
};

void CheckAndPlan(benchmark::State &state, bool is_write) {
  Fixture f(static_cast<size_t>(state.range(0)), static_cast<size_t>(state.range(1)));
  tcp::BufferCache caches[2];
  std::vector<tcp::BufferCache *> cache_ptrs{&caches[0], &caches[1]};
  auto table = f.registry.Snapshot();
  for (auto _ : state) {
    PinSet pins;
    std::vector<Piece> direct, relayed;
    BatchCheck check(*table, *f.remote.Snapshot(), true, kPageRead);  // as for a WRITE (the table stays in f.remote)
    auto r = check.Run(f.descs, 0, &pins, &direct, &relayed);
    if (r.verdict != BatchCheck::Verdict::kOk) state.SkipWithError("check failed");
    auto done = std::make_shared<Completion>();
    auto frames = tcp::PlanFrames(is_write, direct.data(), direct.size(), 0, cache_ptrs, done);
    benchmark::DoNotOptimize(frames);
    // Staging buffers go back to their stream's cache, as on completion.
    for (size_t s = 0; s < frames.size(); ++s) {
      for (auto &req : frames[s]) caches[s].Give(std::move(req->staged));
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * state.range(0) * state.range(1));
  state.counters["ns_per_descriptor"] =
      benchmark::Counter(static_cast<double>(state.iterations() * state.range(0)),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}

void BM_CheckAndPlanWrite(benchmark::State &state) { CheckAndPlan(state, true); }
void BM_CheckAndPlanRead(benchmark::State &state) { CheckAndPlan(state, false); }

BENCHMARK(BM_CheckAndPlanWrite)->Args({100000, 64})->Args({10000, 4096})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CheckAndPlanRead)->Args({100000, 64})->Args({10000, 4096})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hixl

BENCHMARK_MAIN();
