// Built against an installed hixl, as C++14 with -pedantic: the public
// headers must need nothing else.
#include <cstdio>

#include "hixl/hixl.h"
#include "llm_datadist/llm_datadist.h"

int main() {
  int32_t value = -1;
  if (hixl::Hixl::GetCapability(hixl::CLIENT_SERVER_COMM, value) != hixl::SUCCESS || value != 1) return 1;
  hixl::Hixl engine;
  if (engine.Initialize("127.0.0.1", {}) != hixl::SUCCESS) return 2;
  engine.Finalize();
  llm_datadist::LlmDataDist datadist(1, llm_datadist::LlmRole::kDecoder);
  if (datadist.Initialize({{llm_datadist::OPTION_DEVICE_ID, "0"}}) != llm_datadist::LLM_SUCCESS) return 3;
  datadist.Finalize();
  std::printf("consumer ok\n");
  return 0;
}
