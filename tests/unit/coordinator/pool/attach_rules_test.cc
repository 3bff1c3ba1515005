#include "coordinator/pool/attach_rules.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

TEST(AttachRulesTest, AfterAFailedAttach) {
  struct Case {
    AttachPhase phase;
    uint64_t now_ms;
    AttachStep want;
  };
  const uint64_t started = 5'000;
  const Case cases[] = {
      {AttachPhase::kStartup, started, AttachStep::kRetrySilently},
      {AttachPhase::kStartup, started + 9'999, AttachStep::kRetrySilently},
      {AttachPhase::kStartup, started + 10'000, AttachStep::kGiveUpWithWarning},
      {AttachPhase::kAttached, started + 999'999, AttachStep::kRetry},
      {AttachPhase::kLocalForever, started, AttachStep::kStayLocal},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(AfterFailedAttach(c.phase, started, c.now_ms), c.want)
        << AttachStepName(c.want) << " at " << c.now_ms;
  }
}

TEST(AttachRulesTest, ARefusalEndsTheStartupWaitAtOnceButNotAReconnect) {
  const uint64_t started = 5'000;
  EXPECT_EQ(AfterFailedAttach(AttachPhase::kStartup, started, started, AttachFailure::kRefused),
            AttachStep::kGiveUpWithWarning);
  EXPECT_EQ(AfterFailedAttach(AttachPhase::kAttached, started, started, AttachFailure::kRefused),
            AttachStep::kRetry);
  EXPECT_EQ(AttachFailureOf(Status::FailedPrecondition("the pool rejected our Hello: x")),
            AttachFailure::kRefused);
  EXPECT_EQ(AttachFailureOf(Status::InvalidArgument("needs the job secret")),
            AttachFailure::kRefused);
  EXPECT_EQ(AttachFailureOf(Status::Unavailable("connecting: refused")),
            AttachFailure::kUnreachable);
  EXPECT_EQ(AttachFailureOf(Status::Corruption("answered with something else")),
            AttachFailure::kUnreachable);
}

TEST(AttachRulesTest, ReattachReusesOnlyAnUnchangedArena) {
  const ArenaShape registered{.generation = 7, .region_bytes = {1 << 20}};
  struct Case {
    ArenaShape announced;
    Reattach want;
  };
  const Case cases[] = {
      {{.generation = 7, .region_bytes = {1 << 20}}, Reattach::kReuseRegistrations},
      {{.generation = 8, .region_bytes = {1 << 20}}, Reattach::kDisableSharing},
      {{.generation = 7, .region_bytes = {2 << 20}}, Reattach::kDisableSharing},
      {{.generation = 7, .region_bytes = {1 << 20, 4096}}, Reattach::kDisableSharing},
  };
  for (const Case& c : cases) EXPECT_EQ(DecideReattach(registered, c.announced), c.want);
  EXPECT_NE(ReattachWarning(registered, {.generation = 8, .region_bytes = {1 << 20}})
                .find("generation 7 became 8"),
            std::string::npos);
  EXPECT_NE(ReattachWarning(registered, {.generation = 7, .region_bytes = {2 << 20}})
                .find("1 regions of 1048576 bytes became 1 regions of 2097152 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::pool
