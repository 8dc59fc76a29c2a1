// link_table_test.cc: the channel pool's bookkeeping (which links it closes,
// which remotes it remembers as closed), on links without sockets.
#include "engine/link_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hixl {
namespace {

EngineOptions Pool(uint32_t max, double high = 0, double low = 0) {
  EngineOptions o;
  o.max_channel = max;
  o.has_waterlines = high > 0;
  o.high_waterline = high;
  o.low_waterline = low;
  return o;
}

std::shared_ptr<Link> MakeLink(const std::string &name, int64_t last_used) {
  auto l = std::make_shared<Link>();
  l->name = name;
  l->last_used_ms = last_used;
  return l;
}

std::string Remote(size_t i) {
  std::string s = "r";
  s += std::to_string(i);
  return s;
}

std::vector<std::string> Names(const std::vector<std::shared_ptr<Link>> &links) {
  std::vector<std::string> out;
  for (const auto &l : links) out.push_back(l->name);
  return out;
}

TEST(LinkTable, HighWaterlineClosesIdleLinksLeastRecentlyUsedFirstDownToTheLowOne) {
  LinkTable t(Pool(8, 0.5, 0.25));  // high 4, low 2
  std::vector<std::shared_ptr<Link>> closed;
  ASSERT_EQ(t.Insert(MakeLink("b", 20), &closed), SUCCESS);
  ASSERT_EQ(t.Insert(MakeLink("a", 10), &closed), SUCCESS);
  ASSERT_EQ(t.Insert(MakeLink("c", 30), &closed), SUCCESS);
  EXPECT_TRUE(closed.empty());
  ASSERT_EQ(t.Insert(MakeLink("d", 5), &closed), SUCCESS);  // the new link is spared though oldest
  EXPECT_EQ(Names(closed), (std::vector<std::string>{"a", "b"}));
  bool evicted = false;
  EXPECT_FALSE(t.Acquire("a", &evicted));
  EXPECT_TRUE(evicted);
  LinkRef c = t.Acquire("c", &evicted);
  EXPECT_TRUE(c);
  EXPECT_FALSE(evicted);
  EXPECT_EQ(t.All().size(), 2u);
}

TEST(LinkTable, ALinkInUseIsNeverClosed) {
  LinkTable t(Pool(3));
  std::vector<std::shared_ptr<Link>> closed;
  std::vector<LinkRef> held;
  for (const char *n : {"a", "b", "c"}) {
    ASSERT_EQ(t.Insert(MakeLink(n, 1), &closed), SUCCESS);
    held.push_back(t.Acquire(n));
  }
  EXPECT_EQ(t.Insert(MakeLink("d", 1), &closed), RESOURCE_EXHAUSTED);
  EXPECT_TRUE(closed.empty());
  held[1].Reset();  // b idle: it makes room
  EXPECT_EQ(t.Insert(MakeLink("d", 1), &closed), SUCCESS);
  EXPECT_EQ(Names(closed), std::vector<std::string>{"b"});
}

TEST(LinkTable, TrimWaitsForBusyLinksToGoIdle) {
  LinkTable t(Pool(4, 0.75, 0.5));  // high 3, low 2
  std::vector<std::shared_ptr<Link>> closed;
  std::vector<LinkRef> held;
  for (const char *n : {"a", "b", "c"}) {
    ASSERT_EQ(t.Insert(MakeLink(n, 1), &closed), SUCCESS);
    held.push_back(t.Acquire(n));
  }
  EXPECT_TRUE(closed.empty());
  t.Trim(&closed);
  EXPECT_TRUE(closed.empty()) << "busy links were closed";
  held.clear();
  t.Trim(&closed);
  EXPECT_EQ(closed.size(), 1u);
  EXPECT_EQ(t.All().size(), 2u);
}

TEST(LinkTable, DisconnectOrReconnectForgetsTheEviction) {
  LinkTable t(Pool(4, 0.75, 0.5));
  std::vector<std::shared_ptr<Link>> closed;
  for (const char *n : {"a", "b", "c"}) ASSERT_EQ(t.Insert(MakeLink(n, n[0]), &closed), SUCCESS);
  ASSERT_EQ(Names(closed), std::vector<std::string>{"a"});
  bool was = false;
  EXPECT_EQ(t.Remove("a", nullptr, &was), nullptr);
  EXPECT_TRUE(was);
  bool evicted = true;
  t.Acquire("a", &evicted);
  EXPECT_FALSE(evicted) << "a Disconnect should forget the eviction";
  // Evicted again, then reconnected: no longer counted as evicted.
  closed.clear();
  ASSERT_EQ(t.Insert(MakeLink("a", 0), &closed), SUCCESS);
  ASSERT_EQ(Names(closed), std::vector<std::string>{"b"});
  ASSERT_EQ(t.Insert(MakeLink("b", 100), &closed), SUCCESS);
  t.Acquire("b", &evicted);
  EXPECT_FALSE(evicted);
}

TEST(LinkTable, RemembersOnlyTheLatestEvictions) {
  LinkTable t(Pool(4, 0.75, 0.5));  // every insert past two evicts one
  std::vector<std::shared_ptr<Link>> closed;
  const size_t n = LinkTable::kMaxEvicted + 100;
  for (size_t i = 0; i < n + 2; ++i) {
    ASSERT_EQ(t.Insert(MakeLink(Remote(i), static_cast<int64_t>(i)), &closed), SUCCESS);
  }
  ASSERT_EQ(closed.size(), n);
  bool evicted = true;
  for (size_t i = 0; i < 100; ++i) {  // the oldest are forgotten
    t.Acquire(Remote(i), &evicted);
    EXPECT_FALSE(evicted) << i;
  }
  for (size_t i = 100; i < n; ++i) {  // the latest kMaxEvicted are not
    t.Acquire(Remote(i), &evicted);
    ASSERT_TRUE(evicted) << i;
  }
}

}  // namespace
}  // namespace hixl
