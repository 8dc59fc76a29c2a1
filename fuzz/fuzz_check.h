// fuzz_check.h: what the fuzz targets share. FUZZ_CHECK states an invariant
// of the code under test; a broken one aborts, and libFuzzer keeps the input
// that broke it as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
