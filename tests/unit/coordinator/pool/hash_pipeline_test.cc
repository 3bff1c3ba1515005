// HashPipeline: the digest of the pieces handed over equals XXH3-64 over
// their concatenation in hand-over order, whatever their sizes, and a Reset
// starts a fresh digest even while pieces are still being hashed.
#include "coordinator/pool/hash_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

using testing::Pattern;

TEST(HashPipelineTest, PiecesHashLikeTheirConcatenationInOrder) {
  const std::vector<std::byte> large = Pattern((3 << 20) + 12345, 5);
  const std::vector<std::byte> small = Pattern(5000, 6);
  HashPipeline hash;
  for (size_t piece : {size_t{1}, size_t{64}, size_t{4096}, size_t{1} << 20, size_t{3} << 20}) {
    // Tiny pieces over a small buffer: each is a hand-over to the thread.
    const std::vector<std::byte>& bytes = piece < 4096 ? small : large;
    hash.Reset();
    for (size_t at = 0; at < bytes.size(); at += piece) {
      hash.Update(std::span(bytes).subspan(at, std::min(piece, bytes.size() - at)));
    }
    EXPECT_EQ(hash.Digest(), Xxh3(bytes)) << "pieces of " << piece;
  }
}

TEST(HashPipelineTest, ResetWaitsForThePreviousPiecesAndStartsAfresh) {
  const std::vector<std::byte> first = Pattern(8 << 20, 1);
  const std::vector<std::byte> second = Pattern(1000, 2);
  HashPipeline hash;
  hash.Update(first);  // no Digest: Reset must not mix it into the next
  hash.Reset();
  hash.Update(second);
  EXPECT_EQ(hash.Digest(), Xxh3(second));
  // Nothing handed over: the digest of no bytes.
  hash.Reset();
  EXPECT_EQ(hash.Digest(), Xxh3({}));
  // Destroyed with a piece in hand: it is hashed, then the thread joins.
  HashPipeline busy;
  busy.Update(first);
}

}  // namespace
}  // namespace strata::pool
