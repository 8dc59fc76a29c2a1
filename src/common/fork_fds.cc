#include "common/fork_fds.h"

#include <pthread.h>
#include <unistd.h>

#include <mutex>
#include <unordered_set>

namespace hixl {
namespace {

std::mutex g_mu;
std::unordered_set<int> *g_fds = nullptr;  // under g_mu; never freed (used until exit)

void Prepare() { g_mu.lock(); }
void InParent() { g_mu.unlock(); }
// The child's only thread is the one that called fork(), which holds g_mu.
// close() only: shutdown() would end the parent's connections too.
void InChild() {
  for (int fd : *g_fds) close(fd);
  g_fds->clear();
  g_mu.unlock();
}

std::unordered_set<int> &Fds() {
  // First use installs the handlers (under g_mu: no fork can be in one of
  // them yet, as none is installed).
  if (g_fds == nullptr) {
    g_fds = new std::unordered_set<int>();
    pthread_atfork(Prepare, InParent, InChild);
  }
  return *g_fds;
}

}  // namespace

int OpenKeptFd(const std::function<int()> &open) {
  std::lock_guard<std::mutex> lock(g_mu);
  const int fd = open();
  if (fd >= 0) Fds().insert(fd);
  return fd;
}

void CloseKeptFd(int fd) {
  if (fd < 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  Fds().erase(fd);
  close(fd);
}

}  // namespace hixl
