// STRATA_ASSERT: for bugs only. Bad input gets a Status, never an assertion.
#pragma once

#include <string_view>

namespace strata {
// Prints "<file>:<line>: assertion `<cond>` failed: <message>" and aborts.
[[noreturn]] void AssertFail(const char* file, int line, const char* cond,
                             std::string_view message);
}  // namespace strata

#define STRATA_ASSERT(cond, message)                                         \
  do {                                                                       \
    if (!(cond)) ::strata::AssertFail(__FILE__, __LINE__, #cond, (message)); \
  } while (0)
