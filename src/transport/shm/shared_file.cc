#include "transport/shm/shared_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/fork_fds.h"
#include "memory/host/proc_maps.h"
#include "wire/codec.h"

namespace hixl::shm {
namespace {

// The mapping that holds `addr`; false if none (or no /proc).
bool MappingOf(uintptr_t addr, Mapping *out, std::string *why) {
  bool found = false;
  const bool ok = ForEachMapping([&](const Mapping &m) {
    if (m.lo > addr) return false;  // in address order: past it
    if (addr < m.hi) {
      *out = m;
      found = true;
      return false;
    }
    return true;
  });
  if (!ok) {
    *why = std::string("cannot read /proc/self/maps: ") + std::strerror(errno);
  } else if (!found) {
    *why = "the memory is not mapped";
  }
  return found;
}

// An fd of ours open on (major:minor, inode), duplicated; -1 if none.
int DupOpenFile(unsigned major, unsigned minor, uint64_t inode) {
  DIR *d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int found = -1;
  const int self = dirfd(d);
  while (found < 0) {
    dirent *e = readdir(d);
    if (e == nullptr) break;
    char *end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || st.st_ino != inode || ::major(st.st_dev) != major ||
        ::minor(st.st_dev) != minor) {
      continue;
    }
    found = OpenKeptFd([fd] { return fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 0); });
  }
  closedir(d);
  return found;
}

bool SealedAgainstShrinking(int fd) {
  const int seals = fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_SHRINK) != 0;
}

}  // namespace

SharedFile FindSharedFile(uintptr_t addr, size_t len, std::string *why) {
  SharedFile out;
  Mapping m;
  if (!MappingOf(addr, &m, why)) return out;
  if (!m.shared || m.inode == 0) {
    *why = "not a shared mapping of a file";
    return out;
  }
  if (len > m.hi - addr) {
    *why = "it spans more than one mapping";
    return out;
  }
  if (!m.read || !m.write) {
    // A peer's mapping would be writable all the same: a WRITE into memory
    // we may not write must fail as it does through the kernel's copy.
    *why = "it is not mapped read-write";
    return out;
  }
  const int fd = DupOpenFile(m.major, m.minor, m.inode);
  if (fd < 0) {
    *why = "the mapped file is not open in this process";
    return out;
  }
  if (!SealedAgainstShrinking(fd)) {
    *why = "the mapped file is not sealed against shrinking (F_SEAL_SHRINK)";
    CloseKeptFd(fd);
    return out;
  }
  out.fd = fd;
  out.offset = m.offset + (addr - m.lo);
  return out;
}

void EncodeSharedFile(const SharedFile &f, std::vector<uint8_t> *out) {
  wire::Writer w(out);
  w.U32(static_cast<uint32_t>(f.fd));
  w.U64(f.offset);
}

bool DecodeSharedFile(const std::vector<uint8_t> &bytes, SharedFile *out) {
  wire::Reader r(bytes.data(), bytes.size());
  const uint32_t fd = r.U32();
  const uint64_t offset = r.U64();
  if (!r.ok() || fd > static_cast<uint32_t>(INT32_MAX)) return false;
  out->fd = static_cast<int>(fd);
  out->offset = offset;
  return true;
}

std::unique_ptr<PeerMapping> PeerMapping::Map(int pidfd, const SharedFile &f, size_t len, std::string *why) {
#ifdef SYS_pidfd_getfd
  const int fd = pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, f.fd, 0));
  if (fd < 0) {
    *why = pidfd < 0 ? std::string("no pidfd") : std::string("pidfd_getfd: ") + std::strerror(errno);
    return nullptr;
  }
  // pidfd_getfd's fd is close-on-exec already; it is closed below, before
  // any fork could copy it.
  std::unique_ptr<PeerMapping> out;
  struct stat st {};
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = f.offset / page * page;
  if (!SealedAgainstShrinking(fd)) {
    *why = "the file is not sealed against shrinking";
  } else if (fstat(fd, &st) != 0 || st.st_size < 0 || f.offset > static_cast<uint64_t>(st.st_size) ||
             len > static_cast<uint64_t>(st.st_size) - f.offset) {
    *why = "the file is shorter than the region";
  } else {
    const size_t map_len = static_cast<size_t>(f.offset - start) + len;
    void *p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
    if (p == MAP_FAILED) {
      *why = std::string("mmap: ") + std::strerror(errno);
    } else {
      // A fork's child must not write into the peer's memory.
      madvise(p, map_len, MADV_DONTFORK);
      out.reset(new PeerMapping(p, map_len, static_cast<uint8_t *>(p) + (f.offset - start)));
    }
  }
  close(fd);
  return out;
#else
  (void)pidfd;
  (void)f;
  (void)len;
  *why = "this kernel's headers have no pidfd_getfd";
  return nullptr;
#endif
}

PeerMapping::~PeerMapping() { munmap(map_, map_len_); }

}  // namespace hixl::shm
