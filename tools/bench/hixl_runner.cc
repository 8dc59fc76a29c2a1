#include "hixl_runner.h"

#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_util.h"

namespace hixl_bench {
namespace {

std::string StatusText(hixl::Status s) {
  const char *name = "status";
  switch (s) {
    case hixl::PARAM_INVALID: name = "PARAM_INVALID"; break;
    case hixl::TIMEOUT: name = "TIMEOUT"; break;
    case hixl::NOT_CONNECTED: name = "NOT_CONNECTED"; break;
    case hixl::ALREADY_CONNECTED: name = "ALREADY_CONNECTED"; break;
    case hixl::UNSUPPORTED: name = "UNSUPPORTED"; break;
    case hixl::RESOURCE_EXHAUSTED: name = "RESOURCE_EXHAUSTED"; break;
    case hixl::FAILED: name = "FAILED"; break;
    default: break;
  }
  return std::string(name) + " (" + std::to_string(s) + ")";
}

}  // namespace

std::string GlobalResourceConfig(const BenchConfig &cfg, const std::string &transport) {
  nlohmann::json j;
  j["comm_resource_config.protocol_desc"] = nlohmann::json::array({transport + ":host"});
  if (cfg.streams > 0) j["tcp.streams_per_link"] = cfg.streams;
  if (!cfg.auth_key_file.empty()) j["auth.key_file"] = cfg.auth_key_file;
  // Async requests obey the same limit as sync calls.
  j["async_transfer.timeout_ms"] = cfg.timeout_ms;
  return j.dump();
}

HixlInitiator::~HixlInitiator() {
  if (initialized_) engine_.Finalize();
  FreeBuffer(buf_, size_);
}

bool HixlInitiator::Setup(const BenchConfig &cfg, const std::string &transport, const std::string &local_host,
                          const std::string &remote, uintptr_t remote_addr, std::string *why) {
  remote_ = hixl::AscendString(remote.c_str());
  remote_addr_ = remote_addr;
  timeout_ms_ = cfg.timeout_ms;
  std::map<hixl::AscendString, hixl::AscendString> opts;
  opts[hixl::OPTION_GLOBAL_RESOURCE_CONFIG] = GlobalResourceConfig(cfg, transport).c_str();
  hixl::Status s = engine_.Initialize(local_host.c_str(), opts);
  if (s != hixl::SUCCESS) {
    *why = "Initialize(" + local_host + ") returned " + StatusText(s);
    return false;
  }
  initialized_ = true;
  size_ = cfg.total_size;
  buf_ = AllocBuffer(size_);
  if (buf_ == nullptr) {
    *why = "cannot allocate " + FormatSize(size_);
    return false;
  }
  hixl::MemDesc d{};
  d.addr = local_addr();
  d.len = size_;
  hixl::MemHandle h;
  if ((s = engine_.RegisterMem(d, hixl::MEM_HOST, h)) != hixl::SUCCESS) {
    *why = "RegisterMem returned " + StatusText(s);
    return false;
  }
  if ((s = engine_.Connect(remote_, 5000)) != hixl::SUCCESS) {
    *why = "Connect(" + std::string(remote_.GetString()) + ") returned " + StatusText(s);
    return false;
  }
  return true;
}

bool HixlInitiator::RunSync(const std::vector<Call> &calls, hixl::TransferOp op) {
  for (const auto &call : calls) {
    hixl::Status s = engine_.TransferSync(remote_, op, call, timeout_ms_);
    if (s != hixl::SUCCESS) {
      std::fprintf(stderr, "TransferSync %s of %zu descriptor(s) returned %u\n", OpName(op), call.size(), s);
      return false;
    }
  }
  return true;
}

bool HixlInitiator::RunAsync(const std::vector<Call> &calls, hixl::TransferOp op, int depth) {
  // FIFO: the oldest request is polled; a new one is submitted as soon as a
  // slot frees. This is what a caller overlapping transfers would do.
  std::deque<hixl::TransferReq> inflight;
  size_t next = 0;
  hixl::TransferArgs args;
  while (next < calls.size() || !inflight.empty()) {
    while (inflight.size() < static_cast<size_t>(depth) && next < calls.size()) {
      hixl::TransferReq req = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      hixl::Status s = engine_.TransferAsync(remote_, op, calls[next], args, req);
      const auto took = static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
      for (uint64_t seen = post_max_ns_.load(); took > seen && !post_max_ns_.compare_exchange_weak(seen, took);) {
      }
      if (s != hixl::SUCCESS) {
        std::fprintf(stderr, "TransferAsync %s returned %u\n", OpName(op), s);
        return false;
      }
      inflight.push_back(req);
      ++next;
    }
    hixl::TransferStatus st = hixl::TransferStatus::WAITING;
    hixl::Status s = engine_.GetTransferStatus(inflight.front(), st);
    if (s != hixl::SUCCESS) {
      std::fprintf(stderr, "GetTransferStatus returned %u\n", s);
      return false;
    }
    if (st == hixl::TransferStatus::WAITING) {
      // The API has no blocking wait. Yield, so that on a small machine
      // the engine's I/O threads get the core we would spin on: a plain
      // busy poll is 3x slower on 2 cores, a 20-200 us sleep no better
      // than yielding.
      std::this_thread::yield();
      continue;
    }
    if (st != hixl::TransferStatus::COMPLETED) {
      std::fprintf(stderr, "TransferAsync %s request ended %s\n", OpName(op),
                   st == hixl::TransferStatus::TIMEOUT ? "TIMEOUT" : "FAILED");
      return false;
    }
    inflight.pop_front();
  }
  return true;
}

double HixlInitiator::RunOnce(const Workload &w) {
  const Point &p = w.point;
  post_max_ns_ = 0;
  return RunParallel(p.threads, [&](int t) {
    const auto &calls = w.calls[static_cast<size_t>(t)];
    return p.mode == Mode::kAsync ? RunAsync(calls, p.op, p.depth) : RunSync(calls, p.op);
  });
}

double HixlInitiator::TransferOnce(hixl::TransferOp op, uint64_t size) {
  const std::vector<hixl::TransferOpDesc> one = {{local_addr(), remote_addr_, size}};
  double t0 = NowSeconds();
  hixl::Status s = engine_.TransferSync(remote_, op, one, timeout_ms_);
  double t1 = NowSeconds();
  if (s != hixl::SUCCESS) {
    std::fprintf(stderr, "TransferSync %s of %llu bytes returned %u\n", OpName(op),
                 static_cast<unsigned long long>(size), s);
    return -1;
  }
  return t1 - t0;
}

double HixlInitiator::ConnectToFirstByte(uint64_t size) {
  engine_.Disconnect(remote_, timeout_ms_);  // NOT_CONNECTED is fine
  const std::vector<hixl::TransferOpDesc> one = {{local_addr(), remote_addr_, size}};
  double t0 = NowSeconds();
  hixl::Status s = engine_.Connect(remote_, timeout_ms_);
  if (s == hixl::SUCCESS) s = engine_.TransferSync(remote_, hixl::WRITE, one, timeout_ms_);
  double t1 = NowSeconds();
  if (s != hixl::SUCCESS) {
    std::fprintf(stderr, "Connect + first TransferSync to %s returned %u\n", remote_.GetString(), s);
    return -1;
  }
  return t1 - t0;
}

}  // namespace hixl_bench
