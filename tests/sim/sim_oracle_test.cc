// The intersection-rule oracle the simulation checks Agree() against must
// itself be right: a hand-worked example.
#include <gtest/gtest.h>

#include "tests/sim/sim_oracle.h"

namespace strata::sim {
namespace {

PrefixKey Key(uint64_t consumed, uint8_t tag) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[0] = tag;
  return k;
}

TEST(SimOracleTest, KeepsWhatEveryRankHoldsAlikeWithItsParent) {
  const PrefixKey root = Key(16, 1), child = Key(32, 2), grandchild = Key(48, 3);
  const PrefixKey lonely = Key(16, 4), differs = Key(16, 5), orphan = Key(32, 6);
  SimFiles a, b;
  a[root] = {std::nullopt, {1}, true, 1};
  b[root] = {std::nullopt, {1}, false, 1};  // row only on rank 0
  a[child] = b[child] = {root, {2}, true, 1};
  a[grandchild] = b[grandchild] = {child, {3}, false, 1};
  a[lonely] = {std::nullopt, {4}, false, 1};  // rank 0 only
  a[differs] = {std::nullopt, {5}, false, 1};
  b[differs] = {std::nullopt, {6}, false, 1};  // another header
  a[orphan] = b[orphan] = {differs, {7}, false, 1};

  const ExpectedAgreement e = IntersectionRule({&a, &b});
  EXPECT_EQ(e.kept, (std::set<PrefixKey>{root, child, grandchild}));
  EXPECT_EQ(e.deletes[0], (std::set<PrefixKey>{lonely, differs, orphan}));
  EXPECT_EQ(e.deletes[1], (std::set<PrefixKey>{differs, orphan}));
  EXPECT_EQ(e.truncates[0], (std::set<PrefixKey>{root}));
  EXPECT_TRUE(e.truncates[1].empty());
}

}  // namespace
}  // namespace strata::sim
