// notify_test.cc: notifies arrive whole, in order, after the data they follow,
// and at most 4096 wait unread per link.
#include <string>

#include "integration/fixture.h"

namespace hixl_test {
namespace {

std::string Hex(const std::string &s) { return HexField(s); }

class NotifyTest : public PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    ASSERT_EQ(Connect(), hixl::SUCCESS);
  }
  hixl::Status Send(const std::string &name, const std::string &msg) {
    hixl::NotifyDesc n{hixl::AscendString(name.data(), name.size()), hixl::AscendString(msg.data(), msg.size())};
    return engine_.SendNotify(remote_.c_str(), n, 3000);
  }
  std::vector<std::string> Received() {
    auto w = Words(peer_.Command("NOTIFIES"));
    if (w.size() < 2 || w[0] != "OK") return {};
    return std::vector<std::string>(w.begin() + 2, w.end());
  }
};

TEST_P(NotifyTest, ArriveWholeAndInOrder) {
  std::string binary("a\0b\xff", 4);
  ASSERT_EQ(Send("first", "hello"), hixl::SUCCESS);
  ASSERT_EQ(Send(binary, binary), hixl::SUCCESS);
  ASSERT_EQ(Send(std::string(1024, 'n'), std::string(1024, 'm')), hixl::SUCCESS);
  ASSERT_EQ(Send("", ""), hixl::SUCCESS);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(Send("seq", std::to_string(i)), hixl::SUCCESS);
  auto got = Received();
  ASSERT_EQ(got.size(), 104u);
  EXPECT_EQ(got[0], Hex("first") + ":" + Hex("hello"));
  EXPECT_EQ(got[1], Hex(binary) + ":" + Hex(binary));
  EXPECT_EQ(got[2], Hex(std::string(1024, 'n')) + ":" + Hex(std::string(1024, 'm')));
  EXPECT_EQ(got[3], "-:-");
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[4 + i], Hex("seq") + ":" + Hex(std::to_string(i)));
  EXPECT_TRUE(Received().empty());  // GetNotifies forgets what it handed over
}

TEST_P(NotifyTest, SeenOnlyAfterTheDataOfAnEarlierWrite) {
  size_t id = 0;
  uintptr_t raddr = peer_.AllocRegistered(1u << 20, &id);
  LocalBuffer local(1u << 20);
  RegisterLocal(local);
  for (int i = 0; i < 20; ++i) {
    FillPattern(local.data(), local.size(), 300 + i);
    ASSERT_EQ(Transfer(hixl::WRITE, {{local.addr(), raddr, local.size()}}), hixl::SUCCESS);
    ASSERT_EQ(Send("done", std::to_string(i)), hixl::SUCCESS);
    auto got = Received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(peer_.HashOf(id, 0, local.size()), Hash(local.data(), local.size()));
  }
}

TEST_P(NotifyTest, AtMost4096UnreadPerLink) {
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(Send("n", std::to_string(i)), hixl::SUCCESS) << i;
  EXPECT_EQ(Send("n", "one too many"), hixl::NOTIFY_FAILED);
  EXPECT_EQ(Received().size(), 4096u);
  EXPECT_EQ(Send("n", "room again"), hixl::SUCCESS);
  EXPECT_EQ(Received().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Loopback, NotifyTest, AllNets(), NetName);
#ifdef HIXL_TEST_UCX
INSTANTIATE_TEST_SUITE_P(Ucx, NotifyTest, UcxNets(), NetName);
#endif

}  // namespace
}  // namespace hixl_test
