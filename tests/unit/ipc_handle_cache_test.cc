// ipc_handle_cache_test.cc: cuda_ipc's cache of a peer's allocations,
// against the fake CUDA driver: opened once, closed when told, never
// leaked.
#include <gtest/gtest.h>

#include "support/fake_cuda/fake_cuda.h"
#include "transport/cuda_ipc/ipc_handle_cache.h"

namespace hixl::cuda_ipc {
namespace {

TEST(IpcHandleCache, OpensEachAllocationOnceAndClosesOnUnmap) {
  hixl_test::FakeCuda fake;
  const uintptr_t a = fake.Alloc(1 << 20), b = fake.Alloc(4096);
  cuda::IpcHandle ha{}, hb{};
  std::string why;
  ASSERT_TRUE(fake.IpcExport(0, a, &ha, &why)) << why;
  ASSERT_TRUE(fake.IpcExport(0, b, &hb, &why)) << why;
  {
    IpcHandleCache cache(&fake, 0);
    uintptr_t m1 = 0, m2 = 0, m3 = 0;
    ASSERT_TRUE(cache.Map(ha, &m1, &why)) << why;
    ASSERT_TRUE(cache.Map(ha, &m2, &why)) << why;
    EXPECT_EQ(m1, m2);
    EXPECT_NE(m1, a);  // another address, the same bytes
    ASSERT_TRUE(cache.Map(hb, &m3, &why)) << why;
    EXPECT_EQ(fake.ipc_opens.load(), 2);
    EXPECT_EQ(cache.size(), 2u);
    // The bytes are the allocation's.
    const char msg[] = "through the mapping";
    fake.Write(a + 100, msg, sizeof(msg));
    char got[sizeof(msg)] = {};
    std::string err;
    ASSERT_TRUE(fake.CopyFromDevice(0, got, m1 + 100, sizeof(got), &err)) << err;
    EXPECT_STREQ(got, msg);
    // Revoked: closed; the next use opens it again.
    cache.Unmap(IpcHandleCache::KeyOf(ha));
    EXPECT_EQ(fake.ipc_closes.load(), 1);
    EXPECT_FALSE(cache.Holds(IpcHandleCache::KeyOf(ha)));
    ASSERT_TRUE(cache.Map(ha, &m1, &why)) << why;
    EXPECT_EQ(fake.ipc_opens.load(), 3);
    cache.Unmap(IpcHandleCache::KeyOf(ha));  // twice: nothing more
    cache.Unmap(IpcHandleCache::KeyOf(ha));
    EXPECT_EQ(fake.ipc_closes.load(), 2);
  }
  // The cache's end closes what it held.
  EXPECT_EQ(fake.ipc_closes.load(), 3);
  EXPECT_EQ(fake.open_mappings(), 0);
}

TEST(IpcHandleCache, AHandleThatCannotBeOpenedIsNotCached) {
  hixl_test::FakeCuda fake;
  IpcHandleCache cache(&fake, 0);
  cuda::IpcHandle bogus{};
  bogus.bytes[0] = 0xee;
  uintptr_t m = 0;
  std::string why;
  EXPECT_FALSE(cache.Map(bogus, &m, &why));
  EXPECT_NE(why.find("INVALID_HANDLE"), std::string::npos) << why;
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(fake.ipc_opens.load(), 0);
}

}  // namespace
}  // namespace hixl::cuda_ipc
