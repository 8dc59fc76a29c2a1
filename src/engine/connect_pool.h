// connect_pool.h: the threads behind ConnectAsync / DisconnectAsync.
//
// Tasks carry a key (the remote). Tasks with one key run one at a time, in
// the order submitted; tasks with different keys run concurrently on up to
// `threads` threads. At most `capacity` tasks wait to start.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace hixl {

class ConnectPool {
 public:
  ConnectPool(size_t threads, size_t capacity) : threads_(threads), capacity_(capacity) {}
  ~ConnectPool() { Stop(); }
  ConnectPool(const ConnectPool &) = delete;
  ConnectPool &operator=(const ConnectPool &) = delete;

  // False when `capacity` tasks are already waiting (or the pool stopped).
  // Threads start with the first task.
  bool Submit(const std::string &key, std::function<void()> task) EXCLUDES(mu_);
  // Drops the tasks that have not started, waits for those running, joins.
  void Stop() EXCLUDES(mu_);

 private:
  void Run() EXCLUDES(mu_);  // a thread's loop; tasks run without mu_

  const size_t threads_;
  const size_t capacity_;
  // Guards the queues and the thread list; the threads wait on cv_ for a
  // ready key. A task's caller may hold its own locks while it submits
  // (Engine::connect_mu_): the pool's lock comes after them.
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  size_t waiting_ GUARDED_BY(mu_) = 0;
  std::map<std::string, std::deque<std::function<void()>>> pending_ GUARDED_BY(mu_);
  std::set<std::string> running_ GUARDED_BY(mu_);
  std::deque<std::string> ready_ GUARDED_BY(mu_);  // keys with a pending task and none running
  std::vector<std::thread> workers_ GUARDED_BY(mu_);
};

}  // namespace hixl
