#include "engine/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace hixl {

wire::HostIdentity LocalHostIdentity() {
  wire::HostIdentity h;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::getline(boot, h.boot_id);
  if (h.boot_id.size() > 64) h.boot_id.resize(64);
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) == 0) h.pid_ns = st.st_ino;
  h.uid = static_cast<uint32_t>(getuid());
  return h;
}

}  // namespace hixl
