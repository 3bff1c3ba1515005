#include "coordinator/pool/claim_rules.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(ClaimRulesTest, Deadlines) {
  struct Case {
    uint64_t bytes;
    uint64_t allowance_ms;
  };
  const Case cases[] = {
      {0, 0},         {1, 1}, {8 * kMiB, 1'000}, {8 * kMiB + 1, 1'001}, {80 * kMiB, 10'000},
      {4 * kMiB, 500}};
  for (const Case& c : cases) {
    EXPECT_EQ(ByteAllowanceMs(c.bytes), c.allowance_ms) << c.bytes;
    EXPECT_EQ(ClaimBudgetMs(c.bytes), 10'000 + c.allowance_ms) << c.bytes;
  }
  EXPECT_EQ(ManagerClaimBudgetMs(10'000, kManagerSetupLimitMsDefault, 8 * kMiB), 11'000u);
  EXPECT_EQ(ManagerClaimBudgetMs(60'000, kManagerSetupLimitMsDefault, 8 * kMiB), 31'000u);
  EXPECT_EQ(RequesterClaimBudgetMs(8 * kMiB, 16 * kMiB), 12'000u + 3'000u);
}

TEST(ClaimRulesTest, Admission) {
  struct Case {
    PooledState state;
    uint32_t in_flight;
    uint32_t limit;
    ClaimAdmission want;
  };
  const Case cases[] = {
      {PooledState::kAbsent, 0, 4, ClaimAdmission::kNotFound},
      {PooledState::kArriving, 0, 4, ClaimAdmission::kNotReady},
      {PooledState::kReady, 3, 4, ClaimAdmission::kAdmit},
      {PooledState::kReady, 4, 4, ClaimAdmission::kBusy},
      {PooledState::kReady, 0, 0, ClaimAdmission::kBusy},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(AdmitClaim(c.state, c.in_flight, c.limit), c.want)
        << ClaimAdmissionName(c.want) << " " << c.in_flight << "/" << c.limit;
  }
}

TEST(ClaimRulesTest, HealthOfARunningClaim) {
  const ClaimClock clock{.deadline_ms = 20'000, .last_progress_ms = 5'000};
  struct Case {
    uint64_t now_ms;
    ClaimHealth want;
  };
  const Case cases[] = {
      {5'000, ClaimHealth::kRunning},  {7'999, ClaimHealth::kRunning},
      {8'000, ClaimHealth::kStalled},  // 3 s without progress
      {19'999, ClaimHealth::kStalled}, {20'000, ClaimHealth::kDeadlinePast},  // the deadline wins
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CheckClaim(clock, c.now_ms), c.want) << c.now_ms << " " << ClaimHealthName(c.want);
  }
}

TEST(ClaimRulesTest, DestinationHeldUntilWritesDrain) {
  EXPECT_EQ(ReleaseAfterClaimEnd(0), DestinationRelease::kRelease);
  EXPECT_EQ(ReleaseAfterClaimEnd(1), DestinationRelease::kHoldUntilDrained);
}

}  // namespace
}  // namespace strata::pool
