// Unit tests for NotifyInbox (src/engine/notify_inbox.h): the per-link,
// per-host and overall limits on unread notifies, and draining in arrival
// order.
#include "engine/notify_inbox.h"

#include <gtest/gtest.h>

#include <string>

namespace hixl {
namespace {

TEST(NotifyInboxTest, RefusesPastThePerLinkLimitUntilDrained) {
  NotifyInbox inbox;
  for (size_t i = 0; i < NotifyInbox::kMaxUnreadPerLink; ++i) ASSERT_EQ(inbox.Push(1, "h", "n", "m"), SUCCESS) << i;
  EXPECT_EQ(inbox.Push(1, "h", "n", "m"), NOTIFY_FAILED);
  EXPECT_EQ(inbox.Push(2, "h", "other link", "m"), SUCCESS);  // the limit is per link
  EXPECT_EQ(inbox.Drain().size(), NotifyInbox::kMaxUnreadPerLink + 1);
  EXPECT_EQ(inbox.Push(1, "h", "n", "m"), SUCCESS);
}

TEST(NotifyInboxTest, OneHostTakesAQuarterOfTheRoomWhateverItsLinks) {
  // A peer chooses its link numbers: its many links must not add up to the
  // whole inbox, shutting other peers out.
  NotifyInbox inbox;
  const size_t links = NotifyInbox::kMaxUnreadPerHost / NotifyInbox::kMaxUnreadPerLink;
  for (uint64_t l = 0; l < links; ++l) {
    for (size_t i = 0; i < NotifyInbox::kMaxUnreadPerLink; ++i) ASSERT_EQ(inbox.Push(l, "greedy", "n", "m"), SUCCESS);
  }
  EXPECT_EQ(inbox.Push(links + 1, "greedy", "fresh link", "m"), NOTIFY_FAILED);
  EXPECT_EQ(inbox.Push(links + 2, "other", "n", "m"), SUCCESS);  // another host still gets in
  EXPECT_EQ(inbox.Drain().size(), NotifyInbox::kMaxUnreadPerHost + 1);
  EXPECT_EQ(inbox.Push(links + 1, "greedy", "fresh link", "m"), SUCCESS);
}

TEST(NotifyInboxTest, RefusesPastTheOverallLimitWhateverTheLinkAndHost) {
  NotifyInbox inbox;
  const size_t hosts = NotifyInbox::kMaxUnread / NotifyInbox::kMaxUnreadPerHost;
  const size_t links = NotifyInbox::kMaxUnreadPerHost / NotifyInbox::kMaxUnreadPerLink;
  uint64_t link = 0;
  for (size_t h = 0; h < hosts; ++h) {
    for (size_t l = 0; l < links; ++l, ++link) {
      for (size_t i = 0; i < NotifyInbox::kMaxUnreadPerLink; ++i) {
        ASSERT_EQ(inbox.Push(link, "host" + std::to_string(h), "n", "m"), SUCCESS);
      }
    }
  }
  EXPECT_EQ(inbox.Push(link, "another host", "fresh link", "m"), NOTIFY_FAILED);
  EXPECT_EQ(inbox.Drain().size(), NotifyInbox::kMaxUnread);
  EXPECT_EQ(inbox.Push(link, "another host", "fresh link", "m"), SUCCESS);
}

TEST(NotifyInboxTest, DrainsInArrivalOrderAcrossLinks) {
  NotifyInbox inbox;
  ASSERT_EQ(inbox.Push(7, "h", "a", "1"), SUCCESS);
  ASSERT_EQ(inbox.Push(3, "h", "b", "2"), SUCCESS);
  ASSERT_EQ(inbox.Push(7, "h", "c", "3"), SUCCESS);
  auto got = inbox.Drain();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_STREQ(got[0].name.GetString(), "a");
  EXPECT_STREQ(got[1].name.GetString(), "b");
  EXPECT_STREQ(got[2].notify_msg.GetString(), "3");
  EXPECT_TRUE(inbox.Drain().empty());
}

}  // namespace
}  // namespace hixl
