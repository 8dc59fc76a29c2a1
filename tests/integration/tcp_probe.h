// tcp_probe.h: what the kernel knows of this process's TCP connections, for
// tests that must wait until bytes have left (a request is on the wire) rather
// than sleep and hope.
#pragma once

#include <cstdint>

namespace hixl_test {

// Bytes this process's TCP connections to `port` have had acknowledged by
// the far end's kernel, summed. The far kernel takes bytes while its process
// is frozen (up to its buffers): a request has left once this has grown.
uint64_t BytesDeliveredTo(int port);

}  // namespace hixl_test
