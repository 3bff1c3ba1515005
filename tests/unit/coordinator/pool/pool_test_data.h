// Test data shared by the pool's unit tests: token runs and byte patterns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "store/base/prefix_history.h"

namespace strata::pool::testing {

// `count` consecutive tokens from `seed`.
inline std::vector<Token> Tokens(uint32_t count, uint32_t seed) {
  std::vector<Token> t(count);
  std::iota(t.begin(), t.end(), seed);
  return t;
}

// `bytes` bytes of a pattern that differs per `seed`.
inline std::vector<std::byte> Pattern(uint64_t bytes, uint8_t seed) {
  std::vector<std::byte> b(bytes);
  for (uint64_t i = 0; i < bytes; ++i) b[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return b;
}

}  // namespace strata::pool::testing
