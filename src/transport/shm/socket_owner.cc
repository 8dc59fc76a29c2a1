#include "transport/shm/socket_owner.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hixl::shm {
namespace {

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
};

std::string Errno(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

// NLMSG_OK(h, len), with its comparison of the u32 length and the int `len`
// made explicit (clang's -Wsign-compare flags the macro's).
bool NlmsgOk(const nlmsghdr *h, int len) {
  return len >= static_cast<int>(sizeof(nlmsghdr)) && h->nlmsg_len >= sizeof(nlmsghdr) &&
         h->nlmsg_len <= static_cast<unsigned>(len);
}

// Fills the socket id of the far end of a connection from local = our end
// and peer = theirs: its source is our peer, its destination is us.
bool FarEndId(const sockaddr_storage &local, const sockaddr_storage &peer, inet_diag_sockid *id) {
  if (local.ss_family == AF_INET) {
    const auto &l = reinterpret_cast<const sockaddr_in &>(local);
    const auto &p = reinterpret_cast<const sockaddr_in &>(peer);
    id->idiag_sport = p.sin_port;
    id->idiag_dport = l.sin_port;
    std::memcpy(id->idiag_src, &p.sin_addr, sizeof(p.sin_addr));
    std::memcpy(id->idiag_dst, &l.sin_addr, sizeof(l.sin_addr));
  } else if (local.ss_family == AF_INET6) {
    const auto &l = reinterpret_cast<const sockaddr_in6 &>(local);
    const auto &p = reinterpret_cast<const sockaddr_in6 &>(peer);
    id->idiag_sport = p.sin6_port;
    id->idiag_dport = l.sin6_port;
    std::memcpy(id->idiag_src, &p.sin6_addr, sizeof(p.sin6_addr));
    std::memcpy(id->idiag_dst, &l.sin6_addr, sizeof(l.sin6_addr));
  } else {
    return false;
  }
  id->idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  return true;
}

// The inode of the socket at the far end of our connection local -> peer,
// asked of the kernel's socket diagnostics: one exact lookup by addresses
// and ports, in our network namespace.
// `*unavailable` is set when the kernel could not be asked at all (no
// sock_diag here), as opposed to answering that there is no such socket.
bool DiagFarEndInode(const sockaddr_storage &local, const sockaddr_storage &peer, uint64_t *inode, std::string *why,
                     bool *unavailable) {
  *unavailable = false;
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST;
  msg.req.sdiag_family = static_cast<uint8_t>(local.ss_family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  if (!FarEndId(local, peer, &msg.req.id)) {
    *why = "not an IP socket (family " + std::to_string(local.ss_family) + ")";
    return false;
  }
  FdCloser nl{socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)};
  if (nl.fd < 0) {
    *why = Errno("netlink sock_diag socket");
    *unavailable = true;
    return false;
  }
  timeval tv{1, 0};  // the kernel answers at once; never wait forever
  setsockopt(nl.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(nl.fd, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr *>(&kernel), sizeof(kernel)) < 0) {
    *why = Errno("sock_diag request");
    *unavailable = true;
    return false;
  }
  alignas(nlmsghdr) char buf[8192];
  ssize_t n = recv(nl.fd, buf, sizeof(buf), 0);
  if (n < 0) {
    *why = Errno("sock_diag reply");
    *unavailable = true;
    return false;
  }
  int len = static_cast<int>(n);
  for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NlmsgOk(h, len); h = NLMSG_NEXT(h, len)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      const auto *e = static_cast<const nlmsgerr *>(NLMSG_DATA(h));
      *why = std::string("sock_diag: ") + std::strerror(-e->error);
      *unavailable = e->error != -ENOENT;  // ENOENT: asked, and no such socket
      return false;
    }
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) continue;
    const auto *m = static_cast<const inet_diag_msg *>(NLMSG_DATA(h));
    // An exact lookup may fall back to a listening socket on that port:
    // only the established one counts. (Its addresses may be spelt as
    // IPv4-mapped IPv6 ones, so the ports are what is compared.)
    const inet_diag_sockid &want = msg.req.id;
    if (m->idiag_state != TCP_ESTABLISHED || m->id.idiag_sport != want.idiag_sport ||
        m->id.idiag_dport != want.idiag_dport) {
      *why = "sock_diag found no established socket at the far end (state " + std::to_string(m->idiag_state) + ")";
      return false;
    }
    *inode = m->idiag_inode;
    return *inode != 0;
  }
  *why = "sock_diag gave no answer";
  return false;
}

// /proc/net/tcp{,6} spell an address as the 32-bit words of its network
// byte order, each printed as a native integer, then the port in hex.
std::string ProcAddress(const sockaddr_storage &a, bool v6_table) {
  char out[64];
  if (a.ss_family == AF_INET) {
    const auto &in = reinterpret_cast<const sockaddr_in &>(a);
    uint32_t w = 0;
    std::memcpy(&w, &in.sin_addr, 4);
    if (v6_table) {  // as an IPv4-mapped address ::ffff:a.b.c.d
      const uint32_t mapped = htonl(0xffff);
      std::snprintf(out, sizeof(out), "%08X%08X%08X%08X:%04X", 0u, 0u, mapped, w, ntohs(in.sin_port));
    } else {
      std::snprintf(out, sizeof(out), "%08X:%04X", w, ntohs(in.sin_port));
    }
    return out;
  }
  const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(a);
  uint32_t w[4];
  std::memcpy(w, &in6.sin6_addr, 16);
  if (!v6_table) {  // only an IPv4-mapped address has an IPv4 spelling
    if (!IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) return "";
    std::snprintf(out, sizeof(out), "%08X:%04X", w[3], ntohs(in6.sin6_port));
  } else {
    std::snprintf(out, sizeof(out), "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], ntohs(in6.sin6_port));
  }
  return out;
}

// The same lookup in the TCP tables of `pid`'s network namespace, for a
// target in another one (a container of this host). It reads the whole
// table, so it only runs when the exact lookup found nothing.
bool ProcFarEndInode(pid_t pid, const sockaddr_storage &local, const sockaddr_storage &peer, uint64_t *inode,
                     std::string *why) {
  for (bool v6 : {false, true}) {
    // The far end's local address is our peer, its remote address is us.
    const std::string want_local = ProcAddress(peer, v6), want_remote = ProcAddress(local, v6);
    if (want_local.empty() || want_remote.empty()) continue;
    const std::string path = "/proc/" + std::to_string(pid) + (v6 ? "/net/tcp6" : "/net/tcp");
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, l, r, state, queues, timer, retr, uid, timeout;
      uint64_t ino = 0;
      if (!(f >> slot >> l >> r >> state >> queues >> timer >> retr >> uid >> timeout >> ino)) continue;
      if (state == "01" && l == want_local && r == want_remote && ino != 0) {  // 01: ESTABLISHED
        *inode = ino;
        return true;
      }
    }
  }
  *why += "; no such connection in /proc/" + std::to_string(pid) + "/net/tcp{,6} either";
  return false;
}

// True when `pid` lives in another network namespace than we do: only then
// can its end of a connection be missing from our socket tables (reading
// its tables walks every connection of its namespace: not worth doing for
// a pid that merely claims to be here).
bool OtherNetns(pid_t pid) {
  struct stat ours {}, theirs {};
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  return stat("/proc/self/ns/net", &ours) == 0 && stat(path.c_str(), &theirs) == 0 && ours.st_ino != theirs.st_ino;
}

// Holding the socket is not enough: an impostor's accepted socket is
// inherited by what it starts, setuid programs included, and passes over
// SCM_RIGHTS. The process must also run as us, every one of its user ids,
// and not be in the middle of a set-group-id: then it has no privilege that
// we would lend it by writing into it.
bool RunsAsUs(pid_t pid, std::string *why) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  if (!in) {
    *why = "no process " + std::to_string(pid) + " to be seen in /proc";
    return false;
  }
  std::string line;
  bool uid_ok = false, gid_ok = false;
  // The kernel judges process_vm_* by our real ids; a setuid caller of
  // ours (real != effective) is not what this check is for.
  const auto me = static_cast<unsigned long>(getuid());
  const auto my_gid = static_cast<unsigned long>(getgid());
  if (getuid() != geteuid()) {
    *why = "this process runs set-user-id";
    return false;
  }
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string key;
    unsigned long real = 0, eff = 0, saved = 0, fs = 0;
    if (!(f >> key >> real >> eff >> saved >> fs)) continue;
    if (key == "Uid:") uid_ok = real == me && eff == me && saved == me && fs == me;
    if (key == "Gid:") gid_ok = real == my_gid && eff == my_gid && saved == my_gid && fs == my_gid;
  }
  if (!uid_ok || !gid_ok) {
    *why = "process " + std::to_string(pid) + " does not run as our user and group (uid " + std::to_string(me) +
           ", gid " + std::to_string(my_gid) + "), every id of it";
  }
  return uid_ok && gid_ok;
}

}  // namespace

bool PeerHoldsSocket(int fd, pid_t pid, std::string *why) {
  if (!RunsAsUs(pid, why)) return false;
  sockaddr_storage local{}, peer{};
  socklen_t ll = sizeof(local), pl = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &ll) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &pl) != 0) {
    *why = Errno("getsockname/getpeername");
    return false;
  }
  uint64_t inode = 0;
  bool no_diag = false;
  if (!DiagFarEndInode(local, peer, &inode, why, &no_diag) &&
      (!(no_diag || OtherNetns(pid)) || !ProcFarEndInode(pid, local, peer, &inode, why))) {
    return false;
  }
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  FdCloser dfd{open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  DIR *d = dfd.fd >= 0 ? fdopendir(dfd.fd) : nullptr;
  if (d == nullptr) {
    *why = Errno(("open " + dir).c_str());
    return false;
  }
  dfd.fd = -1;  // closedir closes it
  const std::string want = "socket:[" + std::to_string(inode) + "]";
  bool found = false;
  char link[64];
  while (!found) {
    const dirent *e = readdir(d);
    if (e == nullptr) break;
    if (e->d_name[0] == '.') continue;
    ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link));
    found = n == static_cast<ssize_t>(want.size()) && std::memcmp(link, want.data(), want.size()) == 0;
  }
  closedir(d);
  if (!found) *why = "process " + std::to_string(pid) + " does not hold the far end of the link (" + want + ")";
  return found;
}

}  // namespace hixl::shm
