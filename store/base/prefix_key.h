// PrefixKey: the exact endpoint of a token prefix — how many tokens it consumed
// and the chained BLAKE2b-128 digest of those tokens (see prefix_history.h).
#pragma once

#include <compare>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "store/base/digest.h"
#include "store/base/status.h"

namespace strata {

struct PrefixKey {
  uint64_t consumed = 0;
  Digest128 digest{};

  friend auto operator<=>(const PrefixKey&, const PrefixKey&) = default;

  // The record file stem: "%016x-%032x" (consumed, digest), lowercase.
  std::string ToFileStem() const;
  // Parses a file stem written by ToFileStem (exactly 16 hex, '-', 32 hex).
  // Rejects anything else with kInvalidArgument naming what is wrong.
  static Result<PrefixKey> ParseFileStem(std::string_view stem);
};

}  // namespace strata

template <>
struct std::hash<strata::PrefixKey> {
  size_t operator()(const strata::PrefixKey& k) const noexcept {
    // The digest is already uniform; fold its first 8 bytes with the count.
    uint64_t h;
    std::memcpy(&h, k.digest.data(), sizeof h);
    return static_cast<size_t>(h ^ (k.consumed * 0x9e3779b97f4a7c15ULL));
  }
};
