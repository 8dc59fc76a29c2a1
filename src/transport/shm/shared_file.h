// shared_file.h: memory that a peer on this host can map instead of copying
// into it with process_vm_writev. That is memory mapped MAP_SHARED from a
// memfd sealed against shrinking (F_SEAL_SHRINK), as LLM-DataDist's
// AllocateCache makes it: the peer takes the file with pidfd_getfd(2), maps
// it, and copies with memcpy (two to three times the kernel's cross-process
// copy here). The seal is what makes that safe for the peer: a file that
// could shrink under its mapping would fault it (SIGBUS) on its next copy.
//
// The target names, per region, the fd and the file offset of the region's
// first byte (its shm section of the region table); the initiator checks
// the file it gets (seals, size) itself, and copies with process_vm_*
// wherever anything is missing or wrong.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hixl::shm {

// Regions below this size are not looked up: each lookup reads
// /proc/self/maps, and a small region gains little from a mapping.
constexpr size_t kSharedFileMinBytes = 1u << 20;

// Target side: our own file behind [addr, addr + len), if it is one mapping
// MAP_SHARED, read-write, of a file sealed against shrinking that we hold
// open. `fd` is
// a duplicate of ours (close-on-exec, recorded by OpenKeptFd: close it with
// CloseKeptFd), kept while the region is registered so that the number
// stays valid for peers; -1 (and `why`) if none.
struct SharedFile {
  int fd = -1;
  uint64_t offset = 0;  // of addr in the file
};
SharedFile FindSharedFile(uintptr_t addr, size_t len, std::string *why);

// A region's shm section: the fd's number in the target and the offset.
void EncodeSharedFile(const SharedFile &f, std::vector<uint8_t> *out);
bool DecodeSharedFile(const std::vector<uint8_t> &bytes, SharedFile *out);

// Initiator side: a peer's region mapped into our memory.
class PeerMapping {
 public:
  // Takes fd `f.fd` of the process `pidfd` refers to, checks it (sealed
  // against shrinking, at least f.offset + len bytes long) and maps
  // [f.offset, f.offset + len) of it; nullptr (and `why`) if any step fails.
  static std::unique_ptr<PeerMapping> Map(int pidfd, const SharedFile &f, size_t len, std::string *why);
  ~PeerMapping();
  PeerMapping(const PeerMapping &) = delete;
  PeerMapping &operator=(const PeerMapping &) = delete;

  // Where the region's first byte is in our memory.
  uint8_t *base() const { return base_; }

 private:
  PeerMapping(void *map, size_t map_len, uint8_t *base) : map_(map), map_len_(map_len), base_(base) {}
  void *map_;
  size_t map_len_;
  uint8_t *base_;
};

}  // namespace hixl::shm
