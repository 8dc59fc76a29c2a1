// frame_planner.h: cuts a batch into the frames a link's streams carry.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/completion.h"
#include "transport/channel.h"
#include "transport/tcp/initiator_stream.h"
#include "transport/tcp/iov.h"

namespace hixl::tcp {

// Frames carry at most this much data and this many segments: big batches
// still spread over every stream, and one frame never monopolises a stream.
constexpr size_t kMaxFrameBytes = 4u << 20;
constexpr size_t kMinFrameBytes = 256u << 10;
constexpr size_t kMaxFrameSegments = 8192;

// Frames for each of `caches.size()` streams, dealt round-robin starting at
// stream `first`. Every frame is a request completing `done` (parts not yet
// added). Frames of small segments take a staging buffer from their
// stream's cache (see Coalesce); a WRITE's payload is copied into it now.
std::vector<std::vector<std::unique_ptr<Request>>> PlanFrames(bool is_write, const Piece *pieces, size_t n,
                                                              size_t first, const std::vector<BufferCache *> &caches,
                                                              const std::shared_ptr<Completion> &done);

}  // namespace hixl::tcp
