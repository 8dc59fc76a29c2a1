// proc_maps: the parser of /proc/self/maps lines, and this process's own
// mappings read through it.
#include "memory/host/proc_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace hixl {
namespace {

bool Parse(const std::string &line, Mapping *m) { return ParseMapping(line.data(), line.data() + line.size(), m); }

TEST(ProcMapsTest, ParsesEveryFieldOfALine) {
  Mapping m;
  ASSERT_TRUE(Parse("7f12a4c00000-7f12a4e00000 rw-s 0001f000 00:1b 4242                       /memfd:kv (deleted)", &m));
  EXPECT_EQ(m.lo, 0x7f12a4c00000u);
  EXPECT_EQ(m.hi, 0x7f12a4e00000u);
  EXPECT_TRUE(m.read);
  EXPECT_TRUE(m.write);
  EXPECT_TRUE(m.shared);
  EXPECT_EQ(m.offset, 0x1f000u);
  EXPECT_EQ(m.major, 0u);
  EXPECT_EQ(m.minor, 0x1bu);
  EXPECT_EQ(m.inode, 4242u);

  ASSERT_TRUE(Parse("55d0c0a00000-55d0c0a21000 r--p 00000000 fe:01 131081", &m));  // no path
  EXPECT_TRUE(m.read);
  EXPECT_FALSE(m.write);
  EXPECT_FALSE(m.shared);
  EXPECT_EQ(m.major, 0xfeu);
  EXPECT_EQ(m.minor, 1u);
  EXPECT_EQ(m.inode, 131081u);

  ASSERT_TRUE(Parse("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", &m));
  EXPECT_EQ(m.hi, 0xffffffffff601000u);
  EXPECT_FALSE(m.read);
  EXPECT_EQ(m.inode, 0u);
}

TEST(ProcMapsTest, RefusesWhatIsNotALine) {
  Mapping m;
  for (const char *bad : {"", "7f00", "7f00-", "7f00-8f00", "7f00-8f00 rw", "7f00-8f00 rw-p", "7f00-8f00 rw-p 0",
                          "7f00-8f00 rw-p 0 00:00", "7f00-8f00 rw-p 0 00:00 x", "7f00 8f00 rw-p 0 00:00 0",
                          "7F00-8F00 rw-p 0 00:00 0", "7f00-8f00 rw-p- 0 00:00 0"}) {
    EXPECT_FALSE(Parse(bad, &m)) << "'" << bad << "'";
  }
}

TEST(ProcMapsTest, ReadsTheMappingsOfThisProcess) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // A memfd mapped shared at a file offset of one page, then its first page
  // made read-only.
  const int fd = memfd_create("proc-maps-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(4 * page)), 0);
  void *p = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(page));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(mprotect(p, page, PROT_READ), 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  const auto lo = reinterpret_cast<uint64_t>(p);

  std::vector<Mapping> ours;
  uint64_t last_lo = 0;
  bool ordered = true;
  ASSERT_TRUE(ForEachMapping([&](const Mapping &m) {
    ordered = ordered && m.lo >= last_lo;
    last_lo = m.lo;
    if (m.lo >= lo && m.hi <= lo + 3 * page) ours.push_back(m);
    return true;
  }));
  EXPECT_TRUE(ordered);
  ASSERT_EQ(ours.size(), 2u);
  EXPECT_EQ(ours[0].lo, lo);
  EXPECT_EQ(ours[0].hi, lo + page);
  EXPECT_TRUE(ours[0].read && !ours[0].write && ours[0].shared);
  EXPECT_EQ(ours[0].offset, page);
  EXPECT_EQ(ours[1].lo, lo + page);
  EXPECT_EQ(ours[1].hi, lo + 3 * page);
  EXPECT_TRUE(ours[1].read && ours[1].write && ours[1].shared);
  EXPECT_EQ(ours[1].offset, 2 * page);
  for (const Mapping &m : ours) {
    EXPECT_EQ(m.inode, static_cast<uint64_t>(st.st_ino));
    EXPECT_EQ(m.major, major(st.st_dev));
    EXPECT_EQ(m.minor, minor(st.st_dev));
  }

  // Returning false stops the walk.
  int calls = 0;
  ASSERT_TRUE(ForEachMapping([&](const Mapping &) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2);
  munmap(p, 3 * page);
  close(fd);
}

}  // namespace
}  // namespace hixl
