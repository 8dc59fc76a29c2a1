// buffer_pool_test.cc: staging buffers are handed out, waited for in order,
// and handed straight to the oldest waiter on release.
#include <gtest/gtest.h>

#include <vector>

#include "engine/buffer_pool.h"

namespace hixl {
namespace {

TEST(BufferPoolTest, OffWhenEitherNumberIsZero) {
  EXPECT_FALSE(BufferPool(0, 0).enabled());
  EXPECT_FALSE(BufferPool(4, 0).enabled());
  EXPECT_TRUE(BufferPool(1, 4096).enabled());
}

TEST(BufferPoolTest, HandsOutDistinctWritableBuffers) {
  BufferPool pool(3, 1u << 20);
  std::vector<BufferPool::Buffer *> got;
  for (int i = 0; i < 3; ++i) pool.Acquire([&](BufferPool::Buffer *b) { got.push_back(b); });
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(pool.free_count(), 0u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]->size, 1u << 20);
    got[i]->data[0] = static_cast<uint8_t>(i);
    got[i]->data[got[i]->size - 1] = static_cast<uint8_t>(i);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(got[i]->data, got[j]->data);
  }
  for (auto *b : got) pool.Release(b);
  EXPECT_EQ(pool.free_count(), 3u);
}

TEST(BufferPoolTest, WaitersAreServedInOrderOnRelease) {
  BufferPool pool(1, 4096);
  BufferPool::Buffer *held = nullptr;
  pool.Acquire([&](BufferPool::Buffer *b) { held = b; });
  ASSERT_NE(held, nullptr);
  std::vector<int> order;
  BufferPool::Buffer *second = nullptr;
  pool.Acquire([&](BufferPool::Buffer *b) {
    order.push_back(1);
    second = b;
  });
  pool.Acquire([&](BufferPool::Buffer *b) {
    order.push_back(2);
    pool.Release(b);
  });
  EXPECT_TRUE(order.empty());  // nothing free: both wait
  pool.Release(held);
  EXPECT_EQ(order, std::vector<int>({1}));
  EXPECT_EQ(second, held);  // the same buffer, handed straight over
  pool.Release(second);
  EXPECT_EQ(order, std::vector<int>({1, 2}));
  EXPECT_EQ(pool.free_count(), 1u);
}

}  // namespace
}  // namespace hixl
