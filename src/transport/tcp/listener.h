// listener.h: accepts streams on a server engine's port and hands each to
// the least loaded I/O worker as a TargetStream.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/io_worker.h"
#include "transport/tcp/target_context.h"

namespace hixl::tcp {

class Listener : public Pollable {
 public:
  Listener(int fd, const std::vector<std::unique_ptr<IoWorker>> *workers, TargetContext *ctx);
  ~Listener() override;
  int fd() const override { return fd_; }
  void OnEvents(uint32_t events) override;
  void OnShutdown() override;

 private:
  int fd_;
  const std::vector<std::unique_ptr<IoWorker>> *workers_;
  TargetContext *ctx_;
};

}  // namespace hixl::tcp
