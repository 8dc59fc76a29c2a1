// fork_test.cc: a process that forks while it has engines. The child gets a
// copy of every engine but none of its threads; what it inherits must not
// hang it, and must not keep the parent's sockets open.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "integration/fixture.h"

namespace hixl_test {
namespace {

// Waits up to `seconds` for child `pid`, killing it then; its wait status.
int Reap(pid_t pid, double seconds) {
  int status = -1;
  for (int i = 0; i < seconds * 100 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(10000);
  if (status == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  return status;
}

bool ExitedWith0(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

TEST(ForkTest, AChildIsNotHeldByLocksThatParentThreadsHeldAtTheFork) {
  // Parent threads keep taking the locks of two Hixl objects (a call takes
  // one, Initialize the same, Finalize both): a fork catches them held, and
  // the child, which has no such threads, waited for them forever in its
  // first call or Finalize.
  hixl::Hixl a, b;
  ASSERT_EQ(a.Initialize("127.0.0.1", WithTransport({}, "tcp")), hixl::SUCCESS);
  std::atomic<bool> stop{false};
  std::thread caller([&] {
    std::vector<hixl::NotifyDesc> notifies;
    for (int i = 0; i < 10000000 && !stop; ++i) a.GetNotifies(notifies);
  });
  std::thread finalizer([&] {  // Initialize holds one lock, Finalize the other, both for a while
    for (int i = 0; i < 100000 && !stop; ++i) {
      b.Initialize("127.0.0.1", WithTransport({}, "tcp"));
      b.Finalize();
    }
  });
  int hung = 0, failed = 0;
  for (int i = 0; i < 50; ++i) {
    usleep(1000);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(2);  // a hang ends here, not in the parent's wait
      int code = 0;
      std::vector<hixl::NotifyDesc> notifies;
      if (a.GetNotifies(notifies) != hixl::FAILED) code |= 1;  // the parent's engine: refused
      a.Finalize();
      b.Finalize();
      if (b.GetNotifies(notifies) != hixl::FAILED) code |= 2;  // the parent's, or none
      _exit(code);
    }
    const int status = Reap(pid, 5);
    if (WIFSIGNALED(status)) ++hung;
    else if (!ExitedWith0(status)) ++failed;
  }
  stop = true;
  caller.join();
  finalizer.join();
  EXPECT_EQ(hung, 0) << "children that never finished";
  EXPECT_EQ(failed, 0) << "children whose calls returned what they should not";
  a.Finalize();
}

TEST(ForkTest, AChildDoesNotKeepTheParentsSocketsOpen) {
  // A child living on while its parent finalizes an engine: the engine's
  // listener and links must end then, as without the child.
  hixl::Hixl server, client;
  std::string name;
  ASSERT_TRUE(ServeOnFreePort(server, &name));
  server.Finalize();  // ServeOnFreePort gives no transport option
  ASSERT_EQ(server.Initialize(name.c_str(), WithTransport({}, "tcp")), hixl::SUCCESS);
  LocalBuffer target(1 << 20), source(1 << 20);
  ASSERT_NE(target.data(), nullptr);
  ASSERT_NE(source.data(), nullptr);
  RegisterWith(server, target);
  ASSERT_EQ(client.Initialize("127.0.0.1", WithTransport({}, "tcp")), hixl::SUCCESS);
  RegisterWith(client, source);
  FillPattern(source.data(), 4096, 7);
  const std::vector<hixl::TransferOpDesc> d{{source.addr(), target.addr(), 4096}};
  ASSERT_EQ(client.Connect(name.c_str(), 3000), hixl::SUCCESS);
  ASSERT_EQ(client.TransferSync(name.c_str(), hixl::WRITE, d, 3000), hixl::SUCCESS);
  ASSERT_EQ(Hash(target.data(), 4096), Hash(source.data(), 4096));

  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // lives until the parent closes the gate
    alarm(30);
    close(gate[1]);
    char c;
    while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  close(gate[0]);
  server.Finalize();
  // The link's peer end is closed: the transfer fails at once rather than
  // waiting out its timeout for a reply nobody sends.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(client.TransferSync(name.c_str(), hixl::WRITE, d, 4000), hixl::FAILED);
  EXPECT_LT(SecondsSince(t0), 2.0);
  // Nothing listens on the port: a new engine's Connect is refused at once
  // (an open listener nobody serves let it time out).
  hixl::Hixl other;
  ASSERT_EQ(other.Initialize("127.0.0.1", WithTransport({}, "tcp")), hixl::SUCCESS);
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(other.Connect(name.c_str(), 3000), hixl::FAILED);
  EXPECT_LT(SecondsSince(t0), 2.0);
  // And the port can be served again.
  EXPECT_EQ(server.Initialize(name.c_str(), WithTransport({}, "tcp")), hixl::SUCCESS);
  close(gate[1]);
  EXPECT_TRUE(ExitedWith0(Reap(pid, 10)));
  other.Finalize();
  client.Finalize();
  server.Finalize();
}

}  // namespace
}  // namespace hixl_test
