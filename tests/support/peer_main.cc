// hixl_test_peer: a second process for the integration tests. It runs one
// engine and obeys line commands on stdin, answering one line on stdout:
//
//   ALLOC <len> [memfd|memfd-unsealed]
//                            -> OK <id> <addr>        (mmap'ed, zero-filled;
//                               memfd: MAP_SHARED from a memfd sealed
//                               against shrinking, as AllocateCache's, or
//                               from one not sealed)
//   DALLOC <len>             -> OK <id> <addr> | ERR <why>: GPU memory
//                               (cuMemAlloc); REG registers it as MEM_DEVICE,
//                               FILL and HASH copy through the driver
//   REG <id> [off len]       -> OK <handle> | ERR <status>
//   DEREG <handle>           -> OK | ERR <status>
//   FILL <id> <seed>         -> OK                     (pattern.h)
//   HASH <id> <off> <len>    -> OK <hash>
//   NOTIFIES                 -> OK <n> [<hexname>:<hexmsg> ...]
//   NOTIFY_CHECK <id> <slot> <count> <ms>
//                            -> OK <seen> <bad>: takes notifies for up to <ms>
//                               until <count> came; each one's message is a
//                               number i, and slot i of buffer <id> (<slot>
//                               bytes at i * <slot>) must hold pattern seed i
//                               the moment the notify is taken (else bad)
//   CONNECT <remote> <ms>    -> OK | ERR <status>
//   WRITE|READ <remote> <id> <off> <raddr> <len> <ms> -> OK | ERR <status>
//   SWARM_CONNECT <server> <n> <slice> <seed>
//                            -> OK <connected>: n more client engines, each
//                               with a registered slice filled with seed+index
//   SWARM_WRITE <server> <raddr> <first>
//                            -> OK <succeeded>: every swarm engine i writes its
//                               slice to raddr + (first + i) * slice, at once
//   STREAM WRITE|READ <remote> <id> <raddr> <block> <ms> <timeout>
//                            -> OK <bytes> <micros> <status> <last_ms>: moves all
//                               of buffer <id> to or from raddr in descriptors of
//                               <block> bytes, call after call, for <ms> or until
//                               a call fails (<status>: its code, 0 if none;
//                               <last_ms>: how long the last call took)
//   QUIT                     -> OK, then Finalize and exit 0
//
// Usage: hixl_test_peer <local_engine|auto4|auto6> [GlobalResourceConfig JSON
// or ""] [Option=value ...]
// "auto4"/"auto6" pick a free loopback port. Prints "READY <engine name>".
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hixl/hixl.h"
#include "support/free_port.h"
#include "support/gpu_memory.h"
#include "support/pattern.h"

namespace {

struct Buffer {
  uint8_t *p;
  size_t len;
  bool device = false;
};

void Reply(const std::string &s) {
  std::cout << s << std::endl;  // endl flushes: the test reads line by line
}

// Client engines of this process, for the many-peers tests.
struct SwarmMember {
  std::unique_ptr<hixl::Hixl> engine;
  std::vector<uint8_t> slice;
};

// Runs fn(i) for every i in [0, n) on its own thread, all at once.
template <typename Fn>
int RunAll(size_t n, Fn fn) {
  std::vector<std::thread> threads;
  std::vector<int> ok(n, 0);
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&, i] { ok[i] = fn(i) ? 1 : 0; });
  for (auto &t : threads) t.join();
  int sum = 0;
  for (int v : ok) sum += v;
  return sum;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hixl_test_peer <local_engine|auto4|auto6> [GlobalResourceConfig]\n");
    return 2;
  }
  // HIXL_TEST_PEER_UID: run as that user (tests of what another user may do).
  if (const char *uid = std::getenv("HIXL_TEST_PEER_UID")) {
    uid_t u = static_cast<uid_t>(std::strtoul(uid, nullptr, 10));
    if (setgid(u) != 0 || setuid(u) != 0) {
      Reply("FAILED setuid");
      return 1;
    }
  }
  std::map<hixl::AscendString, hixl::AscendString> options;
  if (argc > 2 && argv[2][0] != '\0') options[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = argv[2];
  for (int i = 3; i < argc; ++i) {
    std::string kv = argv[i];
    size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      Reply("FAILED option '" + kv + "' is not Key=value");
      return 1;
    }
    options[kv.substr(0, eq).c_str()] = kv.substr(eq + 1).c_str();
  }
  hixl::Hixl engine;
  std::string name = argv[1];
  hixl::Status s = hixl::FAILED;
  if (name == "auto4" || name == "auto6") {
    bool v6 = name == "auto6";
    for (int attempt = 0; attempt < 20 && s != hixl::SUCCESS; ++attempt) {
      int port = hixl_test::FreePort(v6 ? AF_INET6 : AF_INET);
      name = (v6 ? "[::1]:" : "127.0.0.1:") + std::to_string(port);
      s = engine.Initialize(name.c_str(), options);
    }
  } else {
    s = engine.Initialize(name.c_str(), options);
  }
  if (s != hixl::SUCCESS) {
    Reply("FAILED " + std::to_string(s));
    return 1;
  }
  Reply("READY " + name);

  // Many engines (and their sockets) in one process: lift the fd limit.
  // HIXL_TEST_PEER_NOFILE: set it to that instead (tests of running out).
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    if (const char *nofile = std::getenv("HIXL_TEST_PEER_NOFILE")) {
      lim.rlim_cur = std::min<rlim_t>(std::strtoul(nofile, nullptr, 10), lim.rlim_max);
    } else {
      lim.rlim_cur = lim.rlim_max;
    }
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::vector<Buffer> buffers;
  std::vector<SwarmMember> swarm;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "ALLOC") {
      size_t len = 0;
      std::string kind;
      in >> len >> kind;
      void *p = MAP_FAILED;
      if (kind.empty()) {
        p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      } else {
        // The fd stays open (the engine looks for it), for the process's life.
        const int fd = memfd_create("hixl-test-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd >= 0 && ftruncate(fd, static_cast<off_t>(len)) == 0 &&
            (kind != "memfd" || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0)) {
          p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        }
      }
      if (p == MAP_FAILED) {
        Reply("ERR mmap");
        continue;
      }
      buffers.push_back({static_cast<uint8_t *>(p), len});
      Reply("OK " + std::to_string(buffers.size() - 1) + " " + std::to_string(reinterpret_cast<uintptr_t>(p)));
    } else if (cmd == "DALLOC") {
      size_t len = 0;
      in >> len;
      auto &gpu = hixl_test::GpuMemory::Get();
      uintptr_t p = gpu.ok() ? gpu.Alloc(len) : 0;
      if (p == 0) {
        Reply("ERR " + (gpu.ok() ? std::string("cuMemAlloc") : gpu.why()));
        continue;
      }
      buffers.push_back({reinterpret_cast<uint8_t *>(p), len, true});
      Reply("OK " + std::to_string(buffers.size() - 1) + " " + std::to_string(p));
    } else if (cmd == "REG") {
      size_t id = 0, off = 0, len = 0;
      in >> id;
      if (!(in >> off >> len)) {
        off = 0;
        len = buffers.at(id).len;
      }
      hixl::MemDesc d{};
      d.addr = reinterpret_cast<uintptr_t>(buffers.at(id).p + off);
      d.len = len;
      hixl::MemHandle h = nullptr;
      s = engine.RegisterMem(d, buffers.at(id).device ? hixl::MEM_DEVICE : hixl::MEM_HOST, h);
      Reply(s == hixl::SUCCESS ? "OK " + std::to_string(reinterpret_cast<uintptr_t>(h)) : "ERR " + std::to_string(s));
    } else if (cmd == "PROTECT") {  // PROTECT id off len r|none|rw
      size_t id = 0, off = 0, len = 0;
      std::string mode;
      in >> id >> off >> len >> mode;
      int prot = mode == "r" ? PROT_READ : mode == "none" ? PROT_NONE : PROT_READ | PROT_WRITE;
      Reply(mprotect(buffers.at(id).p + off, len, prot) == 0 ? "OK" : "ERR mprotect");
    } else if (cmd == "DEREG") {
      uintptr_t h = 0;
      in >> h;
      s = engine.DeregisterMem(reinterpret_cast<hixl::MemHandle>(h));
      Reply(s == hixl::SUCCESS ? "OK" : "ERR " + std::to_string(s));
    } else if (cmd == "FILL") {
      size_t id = 0;
      uint64_t seed = 0;
      in >> id >> seed;
      const Buffer &b = buffers.at(id);
      if (b.device) {
        std::vector<uint8_t> tmp(b.len);
        hixl_test::FillPattern(tmp.data(), tmp.size(), seed);
        Reply(hixl_test::GpuMemory::Get().ToDevice(reinterpret_cast<uintptr_t>(b.p), tmp.data(), b.len) ? "OK"
                                                                                                       : "ERR copy");
        continue;
      }
      hixl_test::FillPattern(b.p, b.len, seed);
      Reply("OK");
    } else if (cmd == "HASH") {
      size_t id = 0, off = 0, len = 0;
      in >> id >> off >> len;
      const Buffer &b = buffers.at(id);
      if (b.device) {
        std::vector<uint8_t> tmp(len);
        if (!hixl_test::GpuMemory::Get().FromDevice(tmp.data(), reinterpret_cast<uintptr_t>(b.p + off), len)) {
          Reply("ERR copy");
          continue;
        }
        Reply("OK " + std::to_string(hixl_test::Hash(tmp.data(), len)));
        continue;
      }
      Reply("OK " + std::to_string(hixl_test::Hash(b.p + off, len)));
    } else if (cmd == "NOTIFIES") {
      std::vector<hixl::NotifyDesc> notifies;
      engine.GetNotifies(notifies);
      std::string out = "OK " + std::to_string(notifies.size());
      for (const auto &n : notifies) {
        out.append(" ").append(hixl_test::HexField(n.name.GetString(), n.name.GetLength()));
        out.append(":").append(hixl_test::HexField(n.notify_msg.GetString(), n.notify_msg.GetLength()));
      }
      Reply(out);
    } else if (cmd == "NOTIFY_CHECK") {
      size_t id = 0, slot = 0, count = 0;
      int ms = 0;
      in >> id >> slot >> count >> ms;
      const Buffer &b = buffers.at(id);
      std::vector<uint8_t> expect(slot);
      size_t seen = 0, bad = 0;
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      while (seen < count && std::chrono::steady_clock::now() < until) {
        std::vector<hixl::NotifyDesc> notifies;
        engine.GetNotifies(notifies);
        for (const auto &n : notifies) {
          ++seen;
          const size_t i = std::strtoull(std::string(n.notify_msg.GetString(), n.notify_msg.GetLength()).c_str(),
                                         nullptr, 10);
          hixl_test::FillPattern(expect.data(), slot, i);
          // Hash, not memcmp: UCX's thread wrote the slot, and TSan cannot
          // see that the notify (through the initiator) came after it.
          if (slot == 0 || i >= b.len / slot || hixl_test::Hash(b.p + i * slot, slot) != hixl_test::Hash(expect.data(), slot)) {
            ++bad;
          }
        }
        if (notifies.empty()) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      Reply("OK " + std::to_string(seen) + " " + std::to_string(bad));
    } else if (cmd == "CONNECT") {
      std::string remote;
      int ms = 1000;
      in >> remote >> ms;
      s = engine.Connect(remote.c_str(), ms);
      Reply(s == hixl::SUCCESS ? "OK" : "ERR " + std::to_string(s));
    } else if (cmd == "WRITE" || cmd == "READ") {
      std::string remote;
      size_t id = 0, off = 0, len = 0;
      uintptr_t raddr = 0;
      int ms = 1000;
      in >> remote >> id >> off >> raddr >> len >> ms;
      std::vector<hixl::TransferOpDesc> descs{{reinterpret_cast<uintptr_t>(buffers.at(id).p + off), raddr, len}};
      s = engine.TransferSync(remote.c_str(), cmd == "READ" ? hixl::READ : hixl::WRITE, descs, ms);
      Reply(s == hixl::SUCCESS ? "OK" : "ERR " + std::to_string(s));
    } else if (cmd == "STREAM") {
      std::string op, remote;
      size_t id = 0, block = 0;
      uintptr_t raddr = 0;
      int ms = 0, timeout = 1000;
      in >> op >> remote >> id >> raddr >> block >> ms >> timeout;
      const Buffer &b = buffers.at(id);
      std::vector<hixl::TransferOpDesc> descs;
      for (size_t off = 0; block > 0 && off < b.len; off += block) {
        descs.push_back({reinterpret_cast<uintptr_t>(b.p + off), raddr + off, std::min(block, b.len - off)});
      }
      using Clock = std::chrono::steady_clock;
      const auto start = Clock::now();
      const auto end = start + std::chrono::milliseconds(ms);
      uint64_t bytes = 0;
      long long last_ms = 0;
      s = hixl::SUCCESS;
      while (s == hixl::SUCCESS && Clock::now() < end) {
        auto t0 = Clock::now();
        s = engine.TransferSync(remote.c_str(), op == "READ" ? hixl::READ : hixl::WRITE, descs, timeout);
        last_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        if (s == hixl::SUCCESS) bytes += b.len;
      }
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
      Reply("OK " + std::to_string(bytes) + " " + std::to_string(us) + " " + std::to_string(s) + " " +
            std::to_string(last_ms));
    } else if (cmd == "SWARM_CONNECT") {
      std::string server;
      size_t n = 0, slice = 0;
      uint64_t seed = 0;
      in >> server >> n >> slice >> seed;
      size_t first = swarm.size();
      swarm.resize(first + n);
      bool v6 = server[0] == '[';
      int ok = RunAll(n, [&](size_t i) {
        SwarmMember &m = swarm[first + i];
        m.engine = std::make_unique<hixl::Hixl>();
        m.slice.resize(slice);
        hixl_test::FillPattern(m.slice.data(), slice, seed + first + i);
        hixl::MemDesc d{};
        d.addr = reinterpret_cast<uintptr_t>(m.slice.data());
        d.len = slice;
        hixl::MemHandle h;
        return m.engine->Initialize(v6 ? "[::1]" : "127.0.0.1", {}) == hixl::SUCCESS &&
               m.engine->RegisterMem(d, hixl::MEM_HOST, h) == hixl::SUCCESS &&
               m.engine->Connect(server.c_str(), 10000) == hixl::SUCCESS;
      });
      Reply("OK " + std::to_string(ok));
    } else if (cmd == "SWARM_WRITE") {
      std::string server;
      uintptr_t raddr = 0;
      size_t first = 0;
      in >> server >> raddr >> first;
      int ok = RunAll(swarm.size(), [&](size_t i) {
        SwarmMember &m = swarm[i];
        std::vector<hixl::TransferOpDesc> d{
            {reinterpret_cast<uintptr_t>(m.slice.data()), raddr + (first + i) * m.slice.size(), m.slice.size()}};
        return m.engine->TransferSync(server.c_str(), hixl::WRITE, d, 20000) == hixl::SUCCESS;
      });
      Reply("OK " + std::to_string(ok));
    } else if (cmd == "TRANSPORT") {  // TRANSPORT remote: the transport of the link to it
      std::string remote;
      in >> remote;
      hixl::AscendString transport;
      const hixl::Status s = engine.GetLinkTransport(remote.c_str(), transport);
      Reply(s == hixl::SUCCESS ? std::string("OK ") + transport.GetString() : "ERR " + std::to_string(s));
    } else if (cmd == "QUIT") {
      Reply("OK");
      break;
    } else {
      Reply("ERR unknown command '" + cmd + "'");
    }
  }
  for (auto &m : swarm) {
    if (m.engine) m.engine->Finalize();
  }
  engine.Finalize();
  return 0;
}
