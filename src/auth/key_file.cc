#include "auth/key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hixl::auth {
namespace {

Status Refuse(const std::string &path, const std::string &what, std::string *why) {
  *why = "auth key file '" + path + "': " + what;
  return PARAM_INVALID;
}

}  // namespace

Status ReadKeyFile(const std::string &path, std::vector<uint8_t> *key, std::string *why) {
  // O_NOFOLLOW is not used: a key in a mounted secret (a symlink into a
  // tmpfs, as Kubernetes makes them) is a normal case. fstat below judges
  // the file itself.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return Refuse(path, std::string("cannot open: ") + std::strerror(errno), why);
  struct stat st {};
  Status s = SUCCESS;
  if (fstat(fd, &st) != 0) {
    s = Refuse(path, std::string("cannot stat: ") + std::strerror(errno), why);
  } else if (!S_ISREG(st.st_mode)) {
    s = Refuse(path, "not a regular file", why);
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    s = Refuse(path, std::string("mode ") + mode + " lets group or others access it; chmod 600 it", why);
  } else if (st.st_size > static_cast<off_t>(kMaxKeyBytes + 2)) {
    s = Refuse(path, std::to_string(st.st_size) + " bytes, more than a key (" + std::to_string(kMaxKeyBytes) + ")",
               why);
  }
  std::vector<uint8_t> bytes;
  if (s == SUCCESS) {
    bytes.resize(kMaxKeyBytes + 3);  // one more than allowed: a file that grew is caught
    size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        s = Refuse(path, std::string("cannot read: ") + std::strerror(errno), why);
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    bytes.resize(got);
  }
  close(fd);
  if (s != SUCCESS) return s;
  // One trailing newline ("\n" or "\r\n"), as `echo` or an editor leaves it.
  if (!bytes.empty() && bytes.back() == '\n') bytes.pop_back();
  if (!bytes.empty() && bytes.back() == '\r') bytes.pop_back();
  if (bytes.size() < kMinKeyBytes) {
    s = Refuse(path, std::to_string(bytes.size()) + " bytes of key, fewer than " + std::to_string(kMinKeyBytes), why);
  } else if (bytes.size() > kMaxKeyBytes) {
    s = Refuse(path, "more than " + std::to_string(kMaxKeyBytes) + " bytes of key", why);
  }
  if (s == SUCCESS) key->swap(bytes);
  if (!bytes.empty()) explicit_bzero(bytes.data(), bytes.size());
  return s;
}

}  // namespace hixl::auth
