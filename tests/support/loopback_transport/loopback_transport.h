// loopback_transport.h: a transport for tests only (libhixl does not ship
// it). A link's data goes through its control connection: WRITE and READ
// frames on the control stream, which the target serves as on any stream,
// so a target needs nothing of it. It shows what adding a transport takes:
// this folder, and one registry line (RegisterLoopbackTransport). Links
// choose it with protocol_desc "loopback:host".
#pragma once

namespace hixl_test {

// Adds "loopback" to this process's transports. Before the engines that use
// it are initialized; idempotent.
void RegisterLoopbackTransport();

}  // namespace hixl_test
