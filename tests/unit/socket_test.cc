// socket_test.cc: the options every data socket gets (TuneSocket).
#include "transport/tcp/socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hixl::tcp {
namespace {

int Get(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof(v);
  EXPECT_EQ(getsockopt(fd, level, name, &v, &len), 0);
  return v;
}

TEST(TuneSocket, NoDelayAndKeepAlive) {
  // With the heartbeat off, keepalive is what ends a stream whose peer's
  // host vanished without a FIN or RST.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  TuneSocket(fd);
  EXPECT_NE(Get(fd, IPPROTO_TCP, TCP_NODELAY), 0);
  EXPECT_NE(Get(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
  EXPECT_EQ(Get(fd, IPPROTO_TCP, TCP_KEEPIDLE), kKeepAliveIdleS);
  EXPECT_EQ(Get(fd, IPPROTO_TCP, TCP_KEEPINTVL), kKeepAliveIntervalS);
  EXPECT_EQ(Get(fd, IPPROTO_TCP, TCP_KEEPCNT), kKeepAliveProbes);
  close(fd);
}

}  // namespace
}  // namespace hixl::tcp
