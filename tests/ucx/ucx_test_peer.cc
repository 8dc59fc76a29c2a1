// ucx_test_peer: the target process of the UCX plug-in tests. It loads the
// plug-in (HIXL_UCX_PLUGIN), makes one context (its UCX settings come from
// the environment), and obeys line commands on stdin with one line each on
// stdout. Between commands only the plug-in's progress thread runs: the
// transfers the tests make against it are served by that thread alone.
//
//   ADDR                  -> OK <worker address, hex>
//   ALLOC <len>           -> OK <id> <addr>   (mmap'ed, zero-filled)
//   REG <id> [ro]         -> OK <packed rkey, hex> | ERR <status> (ro: mapped
//                            for remote reads only)
//   DEREG <id>            -> OK | ERR <status>
//   FILL <id> <seed>      -> OK                (pattern.h)
//   HASH <id> <off> <len> -> OK <hash>
//   QUIT                  -> OK, then destroys the context and exits 0
//
// Usage: ucx_test_peer <ignored> (PeerProcess passes a mode). Prints
// "READY <pid>" once the context is up.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "support/pattern.h"
#include "transport/ucx/ucx_loader.h"

namespace {

struct Region {
  uint8_t *p = nullptr;
  size_t len = 0;
  hixl_ucx_mem_t *mem = nullptr;
  unsigned access = HIXL_UCX_REMOTE_READ | HIXL_UCX_REMOTE_WRITE;
};

void Reply(const std::string &line) {
  std::cout << line << std::endl;  // flushes: the test waits for it
}

}  // namespace

int main() {
  const hixl::ucx::PluginLoad &load = hixl::ucx::LoadPlugin();
  if (load.api == nullptr) {
    std::fprintf(stderr, "ucx_test_peer: %s\n", load.why_not.c_str());
    return 2;
  }
  const hixl_ucx_api_t *api = load.api;
  hixl_ucx_context_params_t params{};
  params.name = "ucx-test-peer";
  params.traffic_class = -1;
  params.service_level = -1;
  hixl_ucx_context_t *ctx = nullptr;
  hixl_ucx_status_t st = api->context_create(&params, &ctx);
  if (st != HIXL_UCX_OK) {
    std::fprintf(stderr, "ucx_test_peer: context_create: %s\n", api->status_name(st));
    return 3;
  }
  Reply("READY " + std::to_string(getpid()));
  std::map<size_t, Region> regions;
  size_t next_id = 1;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "ADDR") {
      const void *addr = nullptr;
      size_t len = 0;
      api->worker_address(ctx, &addr, &len);
      Reply("OK " + hixl_test::HexField(static_cast<const char *>(addr), len));
    } else if (cmd == "ALLOC") {
      size_t len = 0;
      in >> len;
      void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (len == 0 || p == MAP_FAILED) {
        Reply("ERR mmap");
        continue;
      }
      regions[next_id] = {static_cast<uint8_t *>(p), len, nullptr};
      Reply("OK " + std::to_string(next_id++) + " " + std::to_string(reinterpret_cast<uintptr_t>(p)));
    } else if (cmd == "REG" || cmd == "DEREG" || cmd == "FILL" || cmd == "HASH") {
      size_t id = 0;
      in >> id;
      auto it = regions.find(id);
      if (it == regions.end()) {
        Reply("ERR no such region");
        continue;
      }
      Region &r = it->second;
      if (cmd == "REG") {
        std::string mode;
        in >> mode;
        r.access = HIXL_UCX_REMOTE_READ | (mode == "ro" ? 0u : unsigned{HIXL_UCX_REMOTE_WRITE});
        st = api->mem_register(ctx, r.p, r.len, HIXL_UCX_MEM_HOST, r.access, &r.mem);
        const void *key = nullptr;
        size_t key_len = 0;
        if (st == HIXL_UCX_OK) st = api->mem_rkey(r.mem, &key, &key_len);
        Reply(st == HIXL_UCX_OK ? "OK " + hixl_test::HexField(static_cast<const char *>(key), key_len)
                                : std::string("ERR ") + api->status_name(st));
      } else if (cmd == "DEREG") {
        st = api->mem_deregister(r.mem);
        r.mem = nullptr;
        Reply(st == HIXL_UCX_OK ? "OK" : std::string("ERR ") + api->status_name(st));
      } else if (cmd == "FILL") {
        uint64_t seed = 0;
        in >> seed;
        hixl_test::FillPattern(r.p, r.len, seed);
        Reply("OK");
      } else {
        size_t off = 0, len = 0;
        in >> off >> len;
        if (off > r.len || len > r.len - off) {
          Reply("ERR range");
          continue;
        }
        Reply("OK " + std::to_string(hixl_test::Hash(r.p + off, len)));
      }
    } else if (cmd == "QUIT") {
      Reply("OK");
      break;
    } else {
      Reply("ERR unknown command");
    }
  }
  api->context_destroy(ctx);
  for (auto &[id, r] : regions) munmap(r.p, r.len);
  return 0;
}
