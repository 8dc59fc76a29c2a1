// Built against an installed hixl, as C++14 with -pedantic: the public
// headers must need nothing else.
#include <cstdio>

#include "hixl/hixl.h"

int main() {
  int32_t value = -1;
  if (hixl::Hixl::GetCapability(hixl::CLIENT_SERVER_COMM, value) != hixl::SUCCESS || value != 1) return 1;
  hixl::Hixl engine;
  if (engine.Initialize("127.0.0.1", {}) != hixl::SUCCESS) return 2;
  engine.Finalize();
  std::printf("consumer ok\n");
  return 0;
}
