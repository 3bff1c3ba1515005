#include "store/io/fault_plan.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace strata {
namespace {

TEST(FaultPlanTest, EmptyPlanInjectsNothing) {
  const FaultPlan plan;
  for (uint64_t i = 1; i < 100; ++i) {
    EXPECT_EQ(plan.Decide(FaultOp::kBlockWrite, i).effect, FaultEffect::kNone);
  }
}

TEST(FaultPlanTest, NthFiresExactlyOnceForItsKind) {
  const FaultPlan plan = FaultPlan::Nth(FaultOp::kRename, 3, FaultEffect::kError, ENOSPC);
  for (uint64_t i = 1; i < 10; ++i) {
    const FaultDecision d = plan.Decide(FaultOp::kRename, i);
    if (i == 3) {
      EXPECT_EQ(d.effect, FaultEffect::kError);
      EXPECT_EQ(d.error, ENOSPC);
    } else {
      EXPECT_EQ(d.effect, FaultEffect::kNone) << i;
    }
    EXPECT_EQ(plan.Decide(FaultOp::kUnlink, i).effect, FaultEffect::kNone);
  }
}

TEST(FaultPlanTest, RandomIsSeededAndNearItsProbability) {
  const FaultPlan a = FaultPlan::Random(FaultOp::kBlockRead, 0.1, FaultEffect::kShort, 0, 42);
  const FaultPlan b = FaultPlan::Random(FaultOp::kBlockRead, 0.1, FaultEffect::kShort, 0, 42);
  const FaultPlan c = FaultPlan::Random(FaultOp::kBlockRead, 0.1, FaultEffect::kShort, 0, 43);
  uint64_t fired = 0;
  uint64_t differ = 0;
  for (uint64_t i = 1; i <= 10000; ++i) {
    const FaultDecision d = a.Decide(FaultOp::kBlockRead, i);
    EXPECT_EQ(d.effect, b.Decide(FaultOp::kBlockRead, i).effect);
    if (d.effect != c.Decide(FaultOp::kBlockRead, i).effect) ++differ;
    if (d.effect == FaultEffect::kShort) ++fired;
    EXPECT_EQ(a.Decide(FaultOp::kBlockWrite, i).effect, FaultEffect::kNone);
  }
  EXPECT_GT(fired, 800u);
  EXPECT_LT(fired, 1200u);
  EXPECT_GT(differ, 0u);
}

TEST(FaultPlanTest, CountersNumberOperationsPerKind) {
  FaultCounters counters;
  EXPECT_EQ(counters.Next(FaultOp::kOpen), 1u);
  EXPECT_EQ(counters.Next(FaultOp::kOpen), 2u);
  EXPECT_EQ(counters.Next(FaultOp::kSync), 1u);
  counters.Fired(FaultOp::kSync);
  EXPECT_EQ(counters.seen(FaultOp::kOpen), 2u);
  EXPECT_EQ(counters.fired(FaultOp::kSync), 1u);
  EXPECT_EQ(counters.fired_total(), 1u);
}

}  // namespace
}  // namespace strata
