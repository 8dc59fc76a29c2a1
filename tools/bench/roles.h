// roles.h: hixl_bench's processes. --demo runs the target and the TCP
// baseline peer as child processes of this executable and measures from
// this one; --role target / initiator measure between two hosts.
#pragma once

#include "config.h"

namespace hixl_bench {

// Registers a buffer of total_size at a server engine on cfg.local, prints
// "READY target engine=... addr=0x... size=N" and serves until stdin closes
// or SIGINT. Accepts every transport: the initiator picks one.
int RunTarget(const BenchConfig &cfg);
// Measures against a running target (cfg.remote, cfg.remote_addr_text),
// without baselines (there is no peer process on the other host).
int RunInitiatorRole(const BenchConfig &cfg);
// Starts a target and a TCP baseline peer as child processes, measures,
// and prints tables with ratios (and writes --json / --csv).
int RunDemo(const BenchConfig &cfg);

}  // namespace hixl_bench
