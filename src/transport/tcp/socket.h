// socket.h: TCP socket set-up, with deadlines for every blocking step.
#pragma once

#include <atomic>

#include <string>

#include "common/address.h"
#include "common/deadline.h"
#include "hixl/hixl_types.h"

namespace hixl::tcp {

// A non-blocking listening socket bound to `addr`; -1 and `why` on failure.
int ListenTcp(const EngineAddress &addr, std::string *why);
// True when `addr`'s IP belongs to this host (it can be bound).
bool IsLocalIp(const EngineAddress &addr, std::string *why);
// Connects to `remote` before `deadline`. SUCCESS with a non-blocking,
// TCP_NODELAY socket in *fd; TIMEOUT; or FAILED with the reason in `why`.
// These calls also give up (FAILED) soon after `*cancel` turns true, if
// given: an engine that is finalizing does not wait out a connect timeout.
Status DialTcp(const EngineAddress &remote, Deadline deadline, int *fd, std::string *why,
               const std::atomic<bool> *cancel = nullptr);
// Non-blocking socket I/O of exactly `len` bytes before `deadline`.
Status SendAll(int fd, const void *data, size_t len, Deadline deadline, std::string *why,
               const std::atomic<bool> *cancel = nullptr);
Status RecvAll(int fd, void *data, size_t len, Deadline deadline, std::string *why,
               const std::atomic<bool> *cancel = nullptr);
// What every data socket gets beyond its creation flags (every one is made
// with SOCK_NONBLOCK | SOCK_CLOEXEC, by socket() or accept4()): TCP_NODELAY,
// and TCP keepalive (probes after 60 s of silence, every 10 s, 6 of them).
void TuneSocket(int fd);
constexpr int kKeepAliveIdleS = 60;
constexpr int kKeepAliveIntervalS = 10;
constexpr int kKeepAliveProbes = 6;
// "ip:port" of the far end of a socket, for logs.
std::string PeerName(int fd);

}  // namespace hixl::tcp
