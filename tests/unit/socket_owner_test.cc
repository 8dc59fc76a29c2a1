// socket_owner_test.cc: telling which process holds the far end of a
// loopback TCP connection (PeerHoldsSocket), over IPv4, IPv6 and
// IPv4-mapped IPv6.
#include "transport/shm/socket_owner.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace hixl::shm {
namespace {

// A connected pair over loopback: `client` dialed from `client_family`,
// `server` accepted on a listener of `listen_family` (AF_INET6 listeners
// are dual-stack, so an IPv4 client reaches them as IPv4-mapped).
struct Pair {
  int client = -1, server = -1;
  Pair(int listen_family, int client_family) {
    int ls = socket(listen_family, SOCK_STREAM, 0);
    sockaddr_storage a{};
    socklen_t len;
    if (listen_family == AF_INET) {
      auto &in = reinterpret_cast<sockaddr_in &>(a);
      in.sin_family = AF_INET;
      in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof(in);
    } else {
      int off = 0;
      setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
      auto &in6 = reinterpret_cast<sockaddr_in6 &>(a);
      in6.sin6_family = AF_INET6;
      in6.sin6_addr = in6addr_any;
      len = sizeof(in6);
    }
    if (bind(ls, reinterpret_cast<sockaddr *>(&a), len) != 0 || listen(ls, 4) != 0 ||
        getsockname(ls, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
      close(ls);
      return;
    }
    const uint16_t port = listen_family == AF_INET ? reinterpret_cast<sockaddr_in &>(a).sin_port
                                                   : reinterpret_cast<sockaddr_in6 &>(a).sin6_port;
    sockaddr_storage to{};
    if (client_family == AF_INET) {
      auto &in = reinterpret_cast<sockaddr_in &>(to);
      in.sin_family = AF_INET;
      in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      in.sin_port = port;
      len = sizeof(in);
    } else {
      auto &in6 = reinterpret_cast<sockaddr_in6 &>(to);
      in6.sin6_family = AF_INET6;
      in6.sin6_addr = in6addr_loopback;
      in6.sin6_port = port;
      len = sizeof(in6);
    }
    client = socket(client_family, SOCK_STREAM, 0);
    if (connect(client, reinterpret_cast<sockaddr *>(&to), len) == 0) server = accept(ls, nullptr, nullptr);
    close(ls);
  }
  ~Pair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

class SocketOwnerTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(SocketOwnerTest, OnlyTheHolderOfTheFarEndIsConfirmed) {
  Pair p(GetParam().first, GetParam().second);
  if (p.server < 0) GTEST_SKIP() << "no loopback for this address family here";
  std::string why;
  // We hold both ends: confirmed either way round.
  EXPECT_TRUE(PeerHoldsSocket(p.client, getpid(), &why)) << why;
  EXPECT_TRUE(PeerHoldsSocket(p.server, getpid(), &why)) << why;

  // A child that closed its copy of the far end holds nothing of ours.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    close(p.server);
    close(p.client);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  why.clear();
  EXPECT_FALSE(PeerHoldsSocket(p.client, child, &why));
  EXPECT_NE(why.find("does not hold"), std::string::npos) << why;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);

  // A pid that is gone: no /proc entry to look into.
  why.clear();
  EXPECT_FALSE(PeerHoldsSocket(p.client, child, &why));
  EXPECT_FALSE(why.empty());
}

INSTANTIATE_TEST_SUITE_P(Families, SocketOwnerTest,
                         ::testing::Values(std::make_pair(AF_INET, AF_INET), std::make_pair(AF_INET6, AF_INET6),
                                           std::make_pair(AF_INET6, AF_INET)),
                         [](const auto &info) {
                           if (info.param.first == AF_INET) return std::string("IPv4");
                           return std::string(info.param.second == AF_INET6 ? "IPv6" : "IPv4MappedIPv6");
                         });

TEST(SocketOwner, AHolderThatDoesNotRunAsUsIsRefused) {
  // The far end passed on to a process of another user, or to a setuid
  // program (real uid someone else, effective uid ours): holding the socket
  // proves nothing then.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change a child's user ids";
  for (bool setuid_like : {false, true}) {
    Pair p(AF_INET, AF_INET);
    ASSERT_GE(p.server, 0);
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
      // Keeps its copy of both ends (as an inheriting child would).
      int rc = setuid_like ? setresuid(65534, 0, 0) : setresuid(65534, 65534, 65534);
      char c = rc == 0 ? 1 : 0;
      if (write(ready[1], &c, 1) != 1) _exit(1);
      pause();
      _exit(0);
    }
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    ASSERT_EQ(c, 1) << "setresuid failed";
    std::string why;
    EXPECT_FALSE(PeerHoldsSocket(p.client, child, &why)) << (setuid_like ? "setuid-like" : "other user");
    EXPECT_NE(why.find("does not run as our user"), std::string::npos) << why;
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    close(ready[0]);
    close(ready[1]);
  }
}

TEST(SocketOwner, UnconnectedSocketIsRefused) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  std::string why;
  EXPECT_FALSE(PeerHoldsSocket(fd, getpid(), &why));
  EXPECT_NE(why.find("getpeername"), std::string::npos) << why;
  close(fd);
}

}  // namespace
}  // namespace hixl::shm
