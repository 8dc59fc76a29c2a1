// Unit tests for hixl::ParseEngineAddress, EngineAddress and SockaddrToAddress
// (src/common/address.h).
#include "common/address.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace hixl {
namespace {

struct ValidCase {
  std::string text;
  int family;
  std::string ip;
  bool has_port;
  uint16_t port;
  std::string canonical;
};

class ValidAddressTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ValidAddressTest, ParsesAndCanonicalises) {
  const ValidCase &c = GetParam();
  EngineAddress a;
  std::string why;
  ASSERT_TRUE(ParseEngineAddress(c.text, &a, &why)) << c.text << ": " << why;
  EXPECT_EQ(a.family, c.family) << c.text;
  EXPECT_EQ(a.ip, c.ip) << c.text;
  EXPECT_EQ(a.has_port, c.has_port) << c.text;
  EXPECT_EQ(a.port, c.port) << c.text;
  EXPECT_EQ(a.ToString(), c.canonical) << c.text;

  // The canonical form parses to the same address and is a fixed point.
  EngineAddress again;
  ASSERT_TRUE(ParseEngineAddress(a.ToString(), &again, &why)) << a.ToString() << ": " << why;
  EXPECT_EQ(again.family, a.family);
  EXPECT_EQ(again.ip, a.ip);
  EXPECT_EQ(again.has_port, a.has_port);
  EXPECT_EQ(again.port, a.port);
  EXPECT_EQ(again.ToString(), a.ToString());
}

INSTANTIATE_TEST_SUITE_P(
    Forms, ValidAddressTest,
    ::testing::Values(ValidCase{"1.2.3.4:80", AF_INET, "1.2.3.4", true, 80, "1.2.3.4:80"},
                      ValidCase{"1.2.3.4", AF_INET, "1.2.3.4", false, 0, "1.2.3.4"},
                      ValidCase{"[::1]:80", AF_INET6, "::1", true, 80, "[::1]:80"},
                      ValidCase{"[::1]", AF_INET6, "::1", false, 0, "[::1]"},
                      ValidCase{"0.0.0.0:1", AF_INET, "0.0.0.0", true, 1, "0.0.0.0:1"},
                      ValidCase{"1.2.3.4:0", AF_INET, "1.2.3.4", true, 0, "1.2.3.4:0"},
                      ValidCase{"1.2.3.4:65535", AF_INET, "1.2.3.4", true, 65535, "1.2.3.4:65535"},
                      ValidCase{"[::1]:0", AF_INET6, "::1", true, 0, "[::1]:0"},
                      ValidCase{"[::1]:65535", AF_INET6, "::1", true, 65535, "[::1]:65535"},
                      ValidCase{"255.255.255.255:9", AF_INET, "255.255.255.255", true, 9, "255.255.255.255:9"},
                      ValidCase{"127.0.0.1:26000", AF_INET, "127.0.0.1", true, 26000, "127.0.0.1:26000"},
                      ValidCase{"[0:0::1]:5", AF_INET6, "::1", true, 5, "[::1]:5"},
                      ValidCase{"[0:0:0:0:0:0:0:1]", AF_INET6, "::1", false, 0, "[::1]"},
                      ValidCase{"[2001:DB8:0:0::1]:443", AF_INET6, "2001:db8::1", true, 443, "[2001:db8::1]:443"},
                      ValidCase{"[::]:7", AF_INET6, "::", true, 7, "[::]:7"},
                      ValidCase{"[::ffff:1.2.3.4]:5", AF_INET6, "::ffff:1.2.3.4", true, 5, "[::ffff:1.2.3.4]:5"}));

class InvalidAddressTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidAddressTest, RejectedWithReasonAndOutputUntouched) {
  const std::string &text = GetParam();
  EngineAddress a;
  a.family = AF_INET;
  a.ip = "9.9.9.9";
  a.port = 4242;
  a.has_port = true;
  std::string why;
  EXPECT_FALSE(ParseEngineAddress(text, &a, &why)) << "accepted '" << text << "'";
  EXPECT_FALSE(why.empty()) << "no reason for '" << text << "'";
  // A failed parse leaves the output alone.
  EXPECT_EQ(a.family, AF_INET);
  EXPECT_EQ(a.ip, "9.9.9.9");
  EXPECT_EQ(a.port, 4242);
  EXPECT_TRUE(a.has_port);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, InvalidAddressTest,
    ::testing::Values(std::string(""), std::string("1.2.3.4:"), std::string("1.2.3.4:65536"),
                      std::string("1.2.3.4:-1"), std::string("1.2.3.4:+5"), std::string("1.2.3.4:8a"),
                      std::string("1.2.3.4:123456"), std::string("1.2.3.4:99999"), std::string("::1"),
                      std::string("[::1"), std::string("[::1]x"), std::string("[::1]:"), std::string("[::1]:65536"),
                      std::string("[::1]:-1"), std::string("[::1]]"), std::string("[]"), std::string("[]:80"),
                      std::string("[1.2.3.4]:5"), std::string("[1.2.3.4]"), std::string("256.1.1.1:5"),
                      std::string("1.2.3:5"), std::string("1.2.3.4.5:5"), std::string("host:80"),
                      std::string("localhost"), std::string(" 1.2.3.4:5"), std::string("1.2.3.4:5 "),
                      std::string("1.2.3.4 :5"), std::string("1.2.3.4:\t5"), std::string("1.2.3.4:5\n"),
                      std::string(":80"), std::string("1.2.3.4:5:6"), std::string("1.2.3.4::5"),
                      std::string("[::1]:8 0"), std::string("[::g]:80"),
                      std::string("1.2.3.4\0:5", 10), std::string("1.2.3.4:5\0", 10),
                      std::string("\0", 1), std::string("[::1\0]:5", 8)));

TEST(AddressTest, WhyNamesTheProblem) {
  EngineAddress a;
  std::string why;
  ASSERT_FALSE(ParseEngineAddress("1.2.3.4:65536", &a, &why));
  EXPECT_NE(why.find("65536"), std::string::npos) << why;
  why.clear();
  ASSERT_FALSE(ParseEngineAddress("host:80", &a, &why));
  EXPECT_NE(why.find("host"), std::string::npos) << why;
}

TEST(AddressTest, PortWithoutValueDiffersFromNoPort) {
  EngineAddress with_zero, without;
  std::string why;
  ASSERT_TRUE(ParseEngineAddress("10.0.0.1:0", &with_zero, &why));
  ASSERT_TRUE(ParseEngineAddress("10.0.0.1", &without, &why));
  EXPECT_TRUE(with_zero.has_port);
  EXPECT_FALSE(without.has_port);
  EXPECT_EQ(with_zero.port, 0);
  EXPECT_EQ(without.port, 0);
  EXPECT_NE(with_zero.ToString(), without.ToString());
}

TEST(AddressTest, Ipv4SockaddrRoundTrip) {
  EngineAddress a;
  std::string why;
  ASSERT_TRUE(ParseEngineAddress("192.168.7.9:4321", &a, &why)) << why;
  sockaddr_storage ss;
  std::memset(&ss, 0xAB, sizeof(ss));
  socklen_t len = a.ToSockaddr(&ss);
  ASSERT_EQ(len, sizeof(sockaddr_in));
  const auto *sin = reinterpret_cast<const sockaddr_in *>(&ss);
  EXPECT_EQ(sin->sin_family, AF_INET);
  EXPECT_EQ(ntohs(sin->sin_port), 4321);
  EXPECT_EQ(ntohl(sin->sin_addr.s_addr), 0xC0A80709u);

  EngineAddress back;
  ASSERT_TRUE(SockaddrToAddress(reinterpret_cast<const sockaddr *>(&ss), &back));
  EXPECT_EQ(back.family, AF_INET);
  EXPECT_EQ(back.ip, "192.168.7.9");
  EXPECT_EQ(back.port, 4321);
  EXPECT_TRUE(back.has_port);
  EXPECT_EQ(back.ToString(), "192.168.7.9:4321");
}

TEST(AddressTest, Ipv6SockaddrRoundTrip) {
  EngineAddress a;
  std::string why;
  ASSERT_TRUE(ParseEngineAddress("[0:0::1]:65535", &a, &why)) << why;
  sockaddr_storage ss;
  std::memset(&ss, 0xCD, sizeof(ss));
  socklen_t len = a.ToSockaddr(&ss);
  ASSERT_EQ(len, sizeof(sockaddr_in6));
  const auto *sin6 = reinterpret_cast<const sockaddr_in6 *>(&ss);
  EXPECT_EQ(sin6->sin6_family, AF_INET6);
  EXPECT_EQ(ntohs(sin6->sin6_port), 65535);
  EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
  EXPECT_EQ(sin6->sin6_flowinfo, 0u);
  EXPECT_EQ(sin6->sin6_scope_id, 0u);

  EngineAddress back;
  ASSERT_TRUE(SockaddrToAddress(reinterpret_cast<const sockaddr *>(&ss), &back));
  EXPECT_EQ(back.family, AF_INET6);
  EXPECT_EQ(back.ip, "::1");
  EXPECT_EQ(back.port, 65535);
  EXPECT_TRUE(back.has_port);
  EXPECT_EQ(back.ToString(), "[::1]:65535");
}

TEST(AddressTest, SockaddrWithoutPortGivesPortZero) {
  EngineAddress a;
  std::string why;
  ASSERT_TRUE(ParseEngineAddress("10.1.2.3", &a, &why)) << why;
  sockaddr_storage ss;
  a.ToSockaddr(&ss);
  EngineAddress back;
  ASSERT_TRUE(SockaddrToAddress(reinterpret_cast<const sockaddr *>(&ss), &back));
  EXPECT_EQ(back.ip, "10.1.2.3");
  EXPECT_EQ(back.port, 0);
  EXPECT_TRUE(back.has_port);  // a socket address always has a port
}

TEST(AddressTest, SockaddrOfOtherFamilyRejected) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EngineAddress back;
  back.ip = "unchanged";
  EXPECT_FALSE(SockaddrToAddress(reinterpret_cast<const sockaddr *>(&un), &back));
  EXPECT_EQ(back.ip, "unchanged");
}

}  // namespace
}  // namespace hixl
