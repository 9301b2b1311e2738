// The one assertion of the fuzz targets: unlike assert(), it is never compiled out, and it
// prints the failed condition before abort() so libFuzzer saves the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

#define ASB_FUZZ_CHECK(cond)                                                                 \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
