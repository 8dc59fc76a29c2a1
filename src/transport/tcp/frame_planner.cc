#include "transport/tcp/frame_planner.h"

#include <algorithm>

#include "wire/messages.h"

namespace hixl::tcp {

std::vector<std::vector<std::unique_ptr<Request>>> PlanFrames(bool is_write, const Piece *pieces, size_t n,
                                                              size_t first, const std::vector<BufferCache *> &caches,
                                                              const std::shared_ptr<Completion> &done) {
  const size_t ns = caches.size();
  std::vector<std::vector<std::unique_ptr<Request>>> per_stream(ns);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += pieces[i].len;
  // Big batches: about one frame per stream, within [min, max] bytes.
  const size_t frame_bytes = std::clamp(total / ns + 1, kMinFrameBytes, kMaxFrameBytes);
  size_t next = first;

  std::vector<iovec> local;
  std::vector<uint8_t> body;
  size_t placed = 0;  // pieces already in earlier frames, to size the next
  // Room for the segments a frame probably holds: what pieces of the
  // batch's mean length fill it with (more grow the writer). Not room for
  // kMaxFrameSegments in every frame: two 128 KiB buffers a frame, mapped
  // and zeroed, were a third of the CPU a TransferAsync of 10,000 x 4 KiB
  // took.
  const size_t per_frame = frame_bytes / std::max<size_t>(1, total / std::max<size_t>(1, n)) + 1;
  auto expect = [&] { return std::min({n - std::min(n, placed) + 1, kMaxFrameSegments, per_frame}); };
  local.reserve(expect());
  wire::SegmentWriter segs(&body, expect());
  size_t frame_len = 0;
  auto flush = [&](bool more) {
    if (segs.count() == 0) return;
    segs.Finish();
    auto r = MakeRequest(is_write ? wire::MsgType::kWriteReq : wire::MsgType::kReadReq, std::move(body), done);
    const bool small = Coalesce(frame_len, local.size());
    BufferCache &cache = *caches[next % ns];
    if (is_write && small) {
      r->staged = cache.Take(frame_len);
      GatherInto(local, r->staged.data());
      r->payload.assign(1, iovec{r->staged.data(), r->staged.size()});
    } else if (is_write) {
      r->payload = std::move(local);
    } else {
      r->in = std::move(local);
      r->in_len = frame_len;
      r->stage_in = small;
      if (small) r->staged = cache.Take(frame_len);
    }
    per_stream[next++ % ns].push_back(std::move(r));
    // `local` and `body` moved into the request: give them room again
    // (if more pieces follow) rather than letting them grow one
    // reallocation at a time.
    local.clear();
    frame_len = 0;
    if (!more) return;
    local.reserve(expect());
    segs = wire::SegmentWriter(&body, expect());
  };
  for (size_t i = 0; i < n; ++i) {
    placed = i;
    Piece p = pieces[i];
    while (p.len > 0) {
      size_t take = std::min(p.len, frame_bytes - frame_len);
      // Pieces are never merged here: the engine already merged what one
      // remote region holds, and the target checks each segment on its own.
      segs.Add(p.remote, take);
      local.push_back({reinterpret_cast<uint8_t *>(p.local), take});
      frame_len += take;
      p.local += take;
      p.remote += take;
      p.len -= take;
      if (frame_len == frame_bytes || segs.count() == kMaxFrameSegments) flush(/*more=*/true);
    }
  }
  flush(/*more=*/false);
  return per_stream;
}

}  // namespace hixl::tcp
