// fork_fds.h: the file descriptors the library keeps open (listening and
// connected sockets, epoll instances, eventfds, the pidfds of same-host
// links), closed in the child of a fork() as it starts.
//
// A child gets a copy of every fd but none of the engine's threads, so its
// copies are never used; yet while they are open a socket stays open: after
// the parent finalizes (or dies) its listener still accepts connections that
// nobody serves (peers' Connect time out instead of failing, and the parent
// cannot bind its port again), and its links never report EOF to their
// peers. There is no close-on-fork flag, hence this list.
#pragma once

#include <functional>

namespace hixl {

// Runs open() (socket, accept4, epoll_create1...) and records the fd it
// returns when >= 0; returns that. Under the lock fork()'s handler takes, so
// no child gets a copy of the fd before it is recorded.
int OpenKeptFd(const std::function<int()> &open);

// Forgets fd and closes it (when >= 0). Done under the same lock as fork()'s
// handler takes, so a child never closes a number the parent has closed and
// reused for something else.
void CloseKeptFd(int fd);

}  // namespace hixl
