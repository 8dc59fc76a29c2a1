// connect_pool.h: the threads behind ConnectAsync / DisconnectAsync.
//
// Tasks carry a key (the remote). Tasks with one key run one at a time, in
// the order submitted; tasks with different keys run concurrently on up to
// `threads` threads. At most `capacity` tasks wait to start.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hixl {

class ConnectPool {
 public:
  ConnectPool(size_t threads, size_t capacity) : threads_(threads), capacity_(capacity) {}
  ~ConnectPool() { Stop(); }
  ConnectPool(const ConnectPool &) = delete;
  ConnectPool &operator=(const ConnectPool &) = delete;

  // False when `capacity` tasks are already waiting (or the pool stopped).
  // Threads start with the first task.
  bool Submit(const std::string &key, std::function<void()> task);
  // Drops the tasks that have not started, waits for those running, joins.
  void Stop();

 private:
  void Run();

  const size_t threads_;
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  size_t waiting_ = 0;
  std::map<std::string, std::deque<std::function<void()>>> pending_;
  std::set<std::string> running_;
  std::deque<std::string> ready_;  // keys with a pending task and none running
  std::vector<std::thread> workers_;
};

}  // namespace hixl
