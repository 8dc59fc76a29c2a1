#include "common/fork_fds.h"

#include <pthread.h>
#include <unistd.h>

#include <unordered_set>

#include "common/mutex.h"

namespace hixl {
namespace {

// Guards the list, and is held across fork() (by the handlers below), so
// that no fd is opened or closed while a child takes its copy.
Mutex g_mu;
std::unordered_set<int> *g_fds GUARDED_BY(g_mu) PT_GUARDED_BY(g_mu) = nullptr;  // never freed (used until exit)

// fork() runs these three: Prepare takes the lock, and the parent's or the
// child's handler lets go of it, in another function than the one that
// took it.
void Prepare() ACQUIRE(g_mu) { g_mu.Lock(); }
void InParent() RELEASE(g_mu) { g_mu.Unlock(); }
// The child's only thread is the one that called fork(), which holds g_mu.
// close() only: shutdown() would end the parent's connections too.
void InChild() RELEASE(g_mu) {
  for (int fd : *g_fds) close(fd);
  g_fds->clear();
  g_mu.Unlock();
}

std::unordered_set<int> &Fds() REQUIRES(g_mu) {
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
  MutexLock lock(&g_mu);
  const int fd = open();
  if (fd >= 0) Fds().insert(fd);
  return fd;
}

void CloseKeptFd(int fd) {
  if (fd < 0) return;
  MutexLock lock(&g_mu);
  Fds().erase(fd);
  close(fd);
}

}  // namespace hixl
