// Helpers shared by the PrefixIndex tests: token histories and publication.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "store/index/index.h"

namespace strata::index_test {

inline constexpr StateSet kReadyOnly{TransferState::kReady};
inline const PrefixIndex::Predicate kAny = [](const IndexEntry&) { return true; };

// Deterministic tokens (splitmix64), distinct per seed.
inline std::vector<Token> Tokens(size_t n, uint64_t seed) {
  std::vector<Token> t(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (Token& tok : t) {
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    tok = static_cast<Token>((z ^ (z >> 31)) % 151936);
  }
  return t;
}

// The first `shared` tokens of `base`, then `extra` fresh tokens from `seed`.
inline std::vector<Token> Fork(const std::vector<Token>& base, size_t shared, size_t extra,
                               uint64_t seed) {
  std::vector<Token> t(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(shared));
  std::vector<Token> tail = Tokens(extra, seed);
  t.insert(t.end(), tail.begin(), tail.end());
  return t;
}

// A record for history's first c tokens; its parent at p tokens if given.
inline NewRecord RecordAt(const PrefixHistory& h, uint64_t c, std::optional<uint64_t> p,
                          TransferState state = TransferState::kReady,
                          RowPresence row = RowPresence::kPresent) {
  NewRecord r;
  r.key = h.key_at(c);
  if (p) r.parent = h.key_at(*p);
  r.bucket_digest = h.bucket_digest(c);
  r.location = NodeLocation(c);
  r.state = state;
  r.row = row;
  return r;
}

inline std::vector<uint64_t> ChainCounts(const LookupHit& hit) {
  std::vector<uint64_t> out;
  for (const ChainLink& link : hit.chain) out.push_back(link.key.consumed);
  return out;
}

inline std::vector<uint64_t> RemovedCounts(const std::vector<RemovedRecord>& removed) {
  std::vector<uint64_t> out;
  for (const RemovedRecord& r : removed) out.push_back(r.key.consumed);
  return out;
}

}  // namespace strata::index_test
