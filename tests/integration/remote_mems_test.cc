// remote_mems_test.cc: GetRemoteMems lists what the remote has registered
// now, including regions registered and deregistered after the link was made.
#include <algorithm>
#include <string>

#include "integration/fixture.h"

namespace hixl_test {
namespace {

class RemoteMemsTest : public PeerTest {
 protected:
  bool Lists(uintptr_t addr, size_t len) {
    std::vector<hixl::MemDesc> mems;
    EXPECT_EQ(engine_.GetRemoteMems(remote_.c_str(), mems, 3000), hixl::SUCCESS);
    return std::any_of(mems.begin(), mems.end(), [&](const hixl::MemDesc &m) { return m.addr == addr && m.len == len; });
  }
};

TEST_P(RemoteMemsTest, ListsRegionsRegisteredBeforeAndAfterTheLink) {
  size_t before_id = 0, after_id = 0;
  uintptr_t before = peer_.AllocRegistered(1u << 20, &before_id);
  ASSERT_NE(before, 0u);
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  EXPECT_TRUE(Lists(before, 1u << 20));
  uintptr_t handle = 0;
  uintptr_t after = peer_.AllocRegistered(12345, &after_id, &handle);
  ASSERT_NE(after, 0u);
  EXPECT_TRUE(Lists(after, 12345));
  ASSERT_EQ(peer_.Command("DEREG " + std::to_string(handle)), "OK");
  EXPECT_FALSE(Lists(after, 12345));
  EXPECT_TRUE(Lists(before, 1u << 20));
}

TEST_P(RemoteMemsTest, StatusCodes) {
  std::vector<hixl::MemDesc> mems(1);
  EXPECT_EQ(engine_.GetRemoteMems(remote_.c_str(), mems, 1000), hixl::NOT_CONNECTED);
  EXPECT_EQ(mems.size(), 1u);  // untouched on failure
  EXPECT_EQ(engine_.GetRemoteMems("not-an-address", mems, 1000), hixl::PARAM_INVALID);
  ASSERT_EQ(Connect(), hixl::SUCCESS);
  EXPECT_EQ(engine_.GetRemoteMems(remote_.c_str(), mems, 0), hixl::PARAM_INVALID);
  hixl::Hixl idle;
  EXPECT_EQ(idle.GetRemoteMems(remote_.c_str(), mems, 1000), hixl::FAILED);  // not initialized
}

INSTANTIATE_TEST_SUITE_P(Loopback, RemoteMemsTest, AllNets(), NetName);

}  // namespace
}  // namespace hixl_test
