// host_identity.h: who and where this process runs, for the handshake.
#pragma once

#include "wire/messages.h"

namespace hixl {

wire::HostIdentity LocalHostIdentity();

}  // namespace hixl
