// quickstart_server: a HIXL engine that serves one buffer.
//
//   quickstart_server 127.0.0.1:16000
//
// It registers a buffer, puts a greeting in it, prints the buffer's address
// for the client, and then does nothing at all while clients read and write
// it (one-sided). It exits when a client sends the notify "bye".
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "hixl/hixl.h"

int main(int argc, char **argv) {
  const char *local = argc > 1 ? argv[1] : "127.0.0.1:16000";
  hixl::Hixl engine;
  if (engine.Initialize(local, {}) != hixl::SUCCESS) {
    std::fprintf(stderr, "Initialize(%s) failed\n", local);
    return 1;
  }
  static char buffer[4096];
  std::snprintf(buffer, sizeof(buffer), "hello from the server");

  hixl::MemDesc mem{};
  mem.addr = reinterpret_cast<uintptr_t>(buffer);
  mem.len = sizeof(buffer);
  hixl::MemHandle handle = nullptr;
  if (engine.RegisterMem(mem, hixl::MEM_HOST, handle) != hixl::SUCCESS) return 1;
  std::printf("server %s: buffer at 0x%" PRIxPTR " (%zu bytes)\n", local, mem.addr, mem.len);
  std::fflush(stdout);

  // The server's CPU does nothing for transfers; it only looks for notifies.
  for (int i = 0; i < 600; ++i) {  // gives up after a minute
    std::vector<hixl::NotifyDesc> notifies;
    engine.GetNotifies(notifies);
    for (const auto &n : notifies) {
      std::printf("server: notify '%s': '%s'; the buffer now says: '%s'\n", n.name.GetString(),
                  n.notify_msg.GetString(), buffer + 1024);
      if (std::strcmp(n.name.GetString(), "bye") == 0) {
        engine.DeregisterMem(handle);
        engine.Finalize();
        return 0;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "server: no client said bye within a minute\n");
  engine.Finalize();
  return 1;
}
