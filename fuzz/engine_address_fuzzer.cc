// engine_address_fuzzer.cc: ParseEngineAddress (src/common/address.cc) on any
// bytes, NULs included. An address it accepts must be canonical after one
// round: its text parses to the same address, and its sockaddr reads back as
// the same ip and port. One it refuses says why.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/address.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  hixl::EngineAddress a;
  std::string why;
  if (!hixl::ParseEngineAddress(text, &a, &why)) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  FUZZ_CHECK(a.family == AF_INET || a.family == AF_INET6);
  FUZZ_CHECK(a.has_port || a.port == 0);

  const std::string canonical = a.ToString();
  hixl::EngineAddress again;
  FUZZ_CHECK(hixl::ParseEngineAddress(canonical, &again, &why));
  FUZZ_CHECK(again.family == a.family && again.ip == a.ip && again.has_port == a.has_port && again.port == a.port);
  FUZZ_CHECK(again.ToString() == canonical);

  sockaddr_storage ss;
  socklen_t len = a.ToSockaddr(&ss);
  FUZZ_CHECK(len == (a.family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in)));
  hixl::EngineAddress back;
  FUZZ_CHECK(hixl::SockaddrToAddress(reinterpret_cast<const sockaddr *>(&ss), &back));
  FUZZ_CHECK(back.family == a.family && back.ip == a.ip && back.port == a.port);
  return 0;
}
