// Unit tests for NotifyInbox (src/engine/notify_inbox.h): the per-link and
// the overall limit on unread notifies, and draining in arrival order.
#include "engine/notify_inbox.h"

#include <gtest/gtest.h>

namespace hixl {
namespace {

TEST(NotifyInboxTest, RefusesPastThePerLinkLimitUntilDrained) {
  NotifyInbox inbox;
  for (size_t i = 0; i < NotifyInbox::kMaxUnreadPerLink; ++i) ASSERT_EQ(inbox.Push(1, "n", "m"), SUCCESS) << i;
  EXPECT_EQ(inbox.Push(1, "n", "m"), NOTIFY_FAILED);
  EXPECT_EQ(inbox.Push(2, "other link", "m"), SUCCESS);  // the limit is per link
  EXPECT_EQ(inbox.Drain().size(), NotifyInbox::kMaxUnreadPerLink + 1);
  EXPECT_EQ(inbox.Push(1, "n", "m"), SUCCESS);
}

TEST(NotifyInboxTest, RefusesPastTheOverallLimitWhateverTheLink) {
  // A peer chooses its link numbers: many links must not add up without bound.
  NotifyInbox inbox;
  const size_t links = NotifyInbox::kMaxUnread / NotifyInbox::kMaxUnreadPerLink;
  for (uint64_t l = 0; l < links; ++l) {
    for (size_t i = 0; i < NotifyInbox::kMaxUnreadPerLink; ++i) ASSERT_EQ(inbox.Push(l, "n", "m"), SUCCESS);
  }
  EXPECT_EQ(inbox.Push(links + 1, "fresh link", "m"), NOTIFY_FAILED);
  EXPECT_EQ(inbox.Drain().size(), NotifyInbox::kMaxUnread);
  EXPECT_EQ(inbox.Push(links + 1, "fresh link", "m"), SUCCESS);
}

TEST(NotifyInboxTest, DrainsInArrivalOrderAcrossLinks) {
  NotifyInbox inbox;
  ASSERT_EQ(inbox.Push(7, "a", "1"), SUCCESS);
  ASSERT_EQ(inbox.Push(3, "b", "2"), SUCCESS);
  ASSERT_EQ(inbox.Push(7, "c", "3"), SUCCESS);
  auto got = inbox.Drain();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_STREQ(got[0].name.GetString(), "a");
  EXPECT_STREQ(got[1].name.GetString(), "b");
  EXPECT_STREQ(got[2].notify_msg.GetString(), "3");
  EXPECT_TRUE(inbox.Drain().empty());
}

}  // namespace
}  // namespace hixl
