// socket_owner.h: which process holds the other end of a TCP connection on
// this host.
//
// Before the shm transport copies into a process by pid, the initiator makes
// sure that this pid is the engine it dialed: the process must hold the
// socket at the far end of the link's first TCP stream. A target's word
// (the pid in its handshake reply) is not enough: any local process could
// answer a connect and name another process of our user, which we would
// then write into.
#pragma once

#include <sys/types.h>

#include <string>

namespace hixl::shm {

// True when process `pid` runs as our user (all its user ids, and no
// set-group-id in effect) and has an open file descriptor for the socket at
// the other end of the connected TCP socket `fd`. False (with `why`) when
// not, or when that cannot be told: the far end is behind NAT, the kernel
// offers no socket diagnostics, or /proc/<pid> is not readable to us.
bool PeerHoldsSocket(int fd, pid_t pid, std::string *why);

}  // namespace hixl::shm
