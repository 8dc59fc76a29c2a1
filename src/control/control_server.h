// control_server.h: a server engine's port. Every stream a peer opens there
// (its links' control streams, and the data streams of its tcp links) is
// accepted by a listener on the engine's first event loop and served by a
// TargetStream (transport/tcp), which asks `handler` what only the engine
// knows.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/address.h"
#include "common/io_worker.h"
#include "control/peer_handler.h"

namespace hixl {

// Listens on `local` and serves its streams on `workers` until they stop.
// False with *why when the port cannot be had.
bool ServeControl(const EngineAddress &local, const std::vector<std::unique_ptr<IoWorker>> *workers,
                  PeerHandler *handler, std::string *why);
// True when `addr`'s IP belongs to this host (an engine without a port
// serves nothing, but its address must still be its own).
bool IsLocalIp(const EngineAddress &addr, std::string *why);

}  // namespace hixl
