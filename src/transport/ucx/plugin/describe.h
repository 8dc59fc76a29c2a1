// describe.h: the transports and devices a UCX endpoint ended up on, for
// the log line a link writes when it comes up.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace hixl::ucx_plugin {

// E.g. "tcp/lo" or "sysv/memory (am keepalive), posix/memory". Progress
// thread only.
std::string DescribeTransports(ucp_ep_h ep);
// True when a forced close of an endpoint on these transports (as
// DescribeTransports names them) waits for the peer to cancel what was
// sent: UCX's shared-memory transports (sysv, posix) flush a full FIFO only
// as the peer drains it, and until then a get's reply may still land.
bool CancelWaitsForPeer(const std::string &description);
// The lanes of ucp_ep_print_info's text, one "transport/device (roles)"
// each, in order, duplicates dropped. Empty when it has none.
std::string LanesOfPrintInfo(const std::string &text);

}  // namespace hixl::ucx_plugin
