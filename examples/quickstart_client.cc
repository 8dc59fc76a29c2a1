// quickstart_client: reads the server's greeting and writes an answer.
//
//   quickstart_client 127.0.0.1:16000 0x<buffer address printed by the server>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hixl/hixl.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <server ip:port> <server buffer address>\n", argv[0]);
    return 2;
  }
  const char *server = argv[1];
  const uintptr_t remote = std::strtoull(argv[2], nullptr, 0);

  hixl::Hixl engine;
  if (engine.Initialize("127.0.0.1", {}) != hixl::SUCCESS) return 1;  // a client: no port
  static char local[4096];
  hixl::MemDesc mem{};
  mem.addr = reinterpret_cast<uintptr_t>(local);
  mem.len = sizeof(local);
  hixl::MemHandle handle = nullptr;
  if (engine.RegisterMem(mem, hixl::MEM_HOST, handle) != hixl::SUCCESS) return 1;
  if (engine.Connect(server, 3000) != hixl::SUCCESS) {
    std::fprintf(stderr, "Connect(%s) failed\n", server);
    return 1;
  }

  // READ the server's first 64 bytes into our buffer.
  std::vector<hixl::TransferOpDesc> read{{mem.addr, remote, 64}};
  if (engine.TransferSync(server, hixl::READ, read, 1000) != hixl::SUCCESS) return 1;
  std::printf("client: read '%s'\n", local);

  // WRITE an answer into the server's buffer at offset 1024.
  std::snprintf(local + 1024, 64, "hello back from the client");
  std::vector<hixl::TransferOpDesc> write{{mem.addr + 1024, remote + 1024, 64}};
  if (engine.TransferSync(server, hixl::WRITE, write, 1000) != hixl::SUCCESS) return 1;
  std::printf("client: wrote '%s'\n", local + 1024);

  // A notify sent after a transfer completed arrives after its data.
  hixl::NotifyDesc bye{"bye", "all done"};
  if (engine.SendNotify(server, bye, 1000) != hixl::SUCCESS) return 1;
  engine.Disconnect(server, 1000);
  engine.DeregisterMem(handle);
  engine.Finalize();
  return 0;
}
