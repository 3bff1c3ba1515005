// PrefixHistory: the token sequence of a request and the chained digests that
// name every prefix of it (docs/formats.md, "Prefix keys").
//
//   D_0     = BLAKE2b-128("strata-prefix-key-v1")
//   D_k     = BLAKE2b-128(D_{k-1} || tokens[64(k-1), 64k) as u32 LE)
//   key_at(c).digest = D_{c/64}                                when c % 64 == 0
//                    = BLAKE2b-128(D_{c/64} || tokens[64*(c/64), c))  otherwise
//   bucket_digest(c) = D_{c/64}
//
// Construction hashes every full block once; key_at(c) then costs one hash of
// at most 64 tokens. Immutable after construction; safe to share across threads.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "store/base/prefix_key.h"

namespace strata {

using Token = uint32_t;

class PrefixHistory {
 public:
  // Tokens per digest block; independent of the page size.
  static constexpr uint64_t kBlockTokens = 64;
  static constexpr std::string_view kRootDomain = "strata-prefix-key-v1";

  explicit PrefixHistory(std::span<const Token> tokens);

  uint64_t size() const { return tokens_.size(); }
  std::span<const Token> tokens() const { return tokens_; }

  // Key of the prefix of `consumed` tokens. Requires consumed <= size().
  PrefixKey key_at(uint64_t consumed) const;
  // Digest of the aligned 64-token boundary at or below `consumed`: the bucket
  // an index files an endpoint under. Requires consumed <= size().
  const Digest128& bucket_digest(uint64_t consumed) const;
  // D_k for k = 0 .. size()/64.
  const Digest128& aligned_digest(uint64_t block_count) const;
  uint64_t aligned_block_count() const { return aligned_.size() - 1; }

  // D_0, the digest of the empty prefix and the root bucket.
  static const Digest128& RootDigest();

 private:
  std::vector<Token> tokens_;
  std::vector<Digest128> aligned_;  // aligned_[k] = D_k
};

}  // namespace strata
