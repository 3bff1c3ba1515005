#include "store/base/prefix_key.h"

#include <cstdio>

namespace strata {

namespace {
constexpr size_t kConsumedDigits = 16;
constexpr size_t kDigestDigits = 32;
constexpr size_t kStemLength = kConsumedDigits + 1 + kDigestDigits;
}  // namespace

std::string PrefixKey::ToFileStem() const {
  char consumed_hex[kConsumedDigits + 1];
  std::snprintf(consumed_hex, sizeof consumed_hex, "%016llx",
                static_cast<unsigned long long>(consumed));
  std::string stem(consumed_hex, kConsumedDigits);
  stem += '-';
  stem += ToHex(digest);
  return stem;
}

Result<PrefixKey> PrefixKey::ParseFileStem(std::string_view stem) {
  if (stem.size() != kStemLength || stem[kConsumedDigits] != '-') {
    return Status::InvalidArgument("malformed record name '" + std::string(stem) +
                                   "': expected 16 hex digits, '-', 32 hex digits");
  }
  uint8_t consumed_be[8];
  Status s = ParseHex(stem.substr(0, kConsumedDigits), consumed_be);
  if (!s.ok()) return s.WithContext("record name consumed count");
  PrefixKey key;
  for (uint8_t b : consumed_be) key.consumed = key.consumed << 8 | b;
  s = ParseHex(stem.substr(kConsumedDigits + 1), key.digest);
  if (!s.ok()) return s.WithContext("record name digest");
  // Names are written lowercase; an uppercase name is not one we wrote.
  if (key.ToFileStem() != stem) {
    return Status::InvalidArgument("record name '" + std::string(stem) + "' is not lowercase");
  }
  return key;
}

}  // namespace strata
