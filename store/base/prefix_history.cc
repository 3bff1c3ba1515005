#include "store/base/prefix_history.h"

#include <bit>

namespace strata {

static_assert(std::endian::native == std::endian::little,
              "token bytes are hashed in memory order, which must be little-endian");

namespace {

Digest128 ChainHash(const Digest128& previous, std::span<const Token> block) {
  Digest128 out;
  Blake2b h(out.size());
  h.Update(previous);
  h.Update({reinterpret_cast<const uint8_t*>(block.data()), block.size_bytes()});
  h.Final(out);
  return out;
}

}  // namespace

const Digest128& PrefixHistory::RootDigest() {
  static const Digest128 root =
      Blake2b128({reinterpret_cast<const uint8_t*>(kRootDomain.data()), kRootDomain.size()});
  return root;
}

PrefixHistory::PrefixHistory(std::span<const Token> tokens)
    : tokens_(tokens.begin(), tokens.end()) {
  uint64_t blocks = tokens_.size() / kBlockTokens;
  aligned_.reserve(blocks + 1);
  aligned_.push_back(RootDigest());
  for (uint64_t k = 0; k < blocks; ++k) {
    aligned_.push_back(
        ChainHash(aligned_.back(), std::span(tokens_).subspan(k * kBlockTokens, kBlockTokens)));
  }
}

PrefixKey PrefixHistory::key_at(uint64_t consumed) const {
  STRATA_ASSERT(consumed <= size(), "key_at beyond the history");
  uint64_t block = consumed / kBlockTokens;
  uint64_t rest = consumed % kBlockTokens;
  PrefixKey key;
  key.consumed = consumed;
  key.digest = rest == 0 ? aligned_[block]
                         : ChainHash(aligned_[block],
                                     std::span(tokens_).subspan(block * kBlockTokens, rest));
  return key;
}

const Digest128& PrefixHistory::bucket_digest(uint64_t consumed) const {
  STRATA_ASSERT(consumed <= size(), "bucket_digest beyond the history");
  return aligned_[consumed / kBlockTokens];
}

const Digest128& PrefixHistory::aligned_digest(uint64_t block_count) const {
  STRATA_ASSERT(block_count < aligned_.size(), "aligned_digest beyond the history");
  return aligned_[block_count];
}

}  // namespace strata
