// FUZZ_CHECK: the assertion of a fuzz target's properties. A violated
// property prints what failed and aborts, so libFuzzer keeps the input as a
// crash file (launch/fuzz.sh names it and the command that replays it).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, message)                                                                \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "%s:%d: fuzz property violated: %s: %s\n", __FILE__, __LINE__, #cond, \
                   std::string(message).c_str());                                                \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)
