// listener.h: accepts streams on a server engine's port and hands each to
// the least loaded I/O worker as a TargetStream.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/io_worker.h"
#include "transport/tcp/target_context.h"

namespace hixl::tcp {

class Listener : public Pollable, public std::enable_shared_from_this<Listener> {
 public:
  // `home`: the worker the listener itself is added to.
  Listener(int fd, IoWorker *home, const std::vector<std::unique_ptr<IoWorker>> *workers, TargetContext *ctx);
  ~Listener() override;
  int fd() const override { return fd_; }
  void OnEvents(uint32_t events) override;
  void OnShutdown() override;

 private:
  // accept() failing for lack of fds or memory stays failing while the
  // socket stays readable: stop watching it for this long, not spin.
  static constexpr std::chrono::milliseconds kBackoff{100};
  void Resume();

  int fd_;
  IoWorker *home_;
  const std::vector<std::unique_ptr<IoWorker>> *workers_;
  TargetContext *ctx_;
};

}  // namespace hixl::tcp
