#include "store/base/prefix_history.h"

#include <blake2.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace strata {
namespace {

// An independent recomputation of the documented scheme (docs/formats.md),
// straight on libb2, sharing no code with PrefixHistory.
Digest128 RawBlake(const std::vector<uint8_t>& bytes) {
  Digest128 out;
  EXPECT_EQ(blake2b(out.data(), bytes.data(), nullptr, out.size(), bytes.size(), 0), 0);
  return out;
}

PrefixKey ReferenceKey(const std::vector<Token>& tokens, uint64_t c) {
  const char* domain = "strata-prefix-key-v1";
  Digest128 d = RawBlake(std::vector<uint8_t>(domain, domain + std::strlen(domain)));
  auto chain = [&](uint64_t from, uint64_t to) {
    std::vector<uint8_t> in(d.begin(), d.end());
    for (uint64_t i = from; i < to; ++i) {
      for (int b = 0; b < 4; ++b) in.push_back(static_cast<uint8_t>(tokens[i] >> (8 * b)));
    }
    return RawBlake(in);
  };
  uint64_t i = 0;
  for (; i + 64 <= c; i += 64) d = chain(i, i + 64);
  if (i < c) d = chain(i, c);
  return PrefixKey{c, d};
}

std::vector<Token> RandomTokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Token> t(n);
  for (Token& x : t) x = rng() % 151936;
  return t;
}

TEST(PrefixHistoryTest, KeyAtMatchesIndependentRecomputation) {
  // Keys are defined on 64-token blocks whatever the page size; check every
  // endpoint for histories shaped like 64-, 128- and 256-token-page models.
  for (uint32_t page_tokens : {64u, 128u, 256u}) {
    std::vector<Token> tokens = RandomTokens(300, page_tokens);
    PrefixHistory h(tokens);
    for (uint64_t c = 0; c <= 300; ++c) {
      ASSERT_EQ(h.key_at(c), ReferenceKey(tokens, c))
          << "page_tokens " << page_tokens << " c " << c;
    }
  }
}

TEST(PrefixHistoryTest, TokenBeforeEndpointChangesKeyAfterDoesNot) {
  std::vector<Token> tokens = RandomTokens(300, 7);
  PrefixHistory base(tokens);
  for (uint64_t c : {1u, 63u, 64u, 65u, 127u, 128u, 200u, 256u, 299u}) {
    for (uint64_t pos = 0; pos < 300; pos += 13) {
      std::vector<Token> changed = tokens;
      changed[pos] ^= 1;
      PrefixHistory h(changed);
      if (pos < c) {
        EXPECT_NE(h.key_at(c), base.key_at(c)) << "c " << c << " pos " << pos;
      } else {
        EXPECT_EQ(h.key_at(c), base.key_at(c)) << "c " << c << " pos " << pos;
      }
    }
  }
}

TEST(PrefixHistoryTest, BucketDigestIsAlignedKey) {
  std::vector<Token> tokens = RandomTokens(300, 9);
  PrefixHistory h(tokens);
  EXPECT_EQ(h.aligned_block_count(), 4u);
  for (uint64_t c = 0; c <= 300; ++c) {
    uint64_t aligned = c / 64 * 64;
    EXPECT_EQ(h.bucket_digest(c), h.key_at(aligned).digest) << c;
  }
  EXPECT_EQ(h.bucket_digest(10), PrefixHistory::RootDigest());
  EXPECT_EQ(h.key_at(0).digest, PrefixHistory::RootDigest());
}

TEST(PrefixHistoryTest, SharedPrefixSharesKeys) {
  std::vector<Token> a = RandomTokens(200, 1);
  std::vector<Token> b = a;
  b.resize(150);
  b.push_back(42);
  PrefixHistory ha(a), hb(b);
  EXPECT_EQ(ha.key_at(150), hb.key_at(150));
  EXPECT_NE(ha.key_at(151), hb.key_at(151));
}

TEST(PrefixHistoryDeathTest, KeyBeyondHistoryIsABug) {
  std::vector<Token> tokens = RandomTokens(10, 1);
  PrefixHistory h(tokens);
  EXPECT_DEATH((void)h.key_at(11), "key_at beyond the history");
}

}  // namespace
}  // namespace strata
