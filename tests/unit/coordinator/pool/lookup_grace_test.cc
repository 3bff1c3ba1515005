#include "coordinator/pool/lookup_grace.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

TEST(LookupGraceTest, GracePeriod) {
  struct Case {
    ManagerPlace place;
    uint64_t rtt_us;
    uint64_t want_us;
  };
  const Case cases[] = {
      {ManagerPlace::kLocalHost, 0, 2'000},
      {ManagerPlace::kLocalHost, 900'000, 2'000},  // local ignores the round trip
      {ManagerPlace::kNetwork, 100, 2'000},        // 400 us, raised to the floor
      {ManagerPlace::kNetwork, 10'000, 40'000},
      {ManagerPlace::kNetwork, 100'000, 250'000},  // capped
  };
  for (const Case& c : cases) EXPECT_EQ(LookupGraceUs(c.place, c.rtt_us), c.want_us) << c.rtt_us;
}

TEST(LookupGraceTest, AdmissionWithATicket) {
  struct Case {
    TicketState ticket;
    uint64_t now_us;
    AdmissionLookup want;
  };
  const uint64_t begun = 1'000'000;
  const Case cases[] = {
      {TicketState::kReady, begun, AdmissionLookup::kWithPool},
      {TicketState::kReady, begun + 10'000'000, AdmissionLookup::kWithPool},
      {TicketState::kPending, begun, AdmissionLookup::kWait},
      {TicketState::kPending, begun + 1'999, AdmissionLookup::kWait},
      {TicketState::kPending, begun + 2'000, AdmissionLookup::kLocalOnly},
      {TicketState::kPending, begun - 5, AdmissionLookup::kWait},  // clock before begin
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecideAdmissionLookup(c.ticket, begun, c.now_us, kLocalGraceUs), c.want)
        << AdmissionLookupName(c.want) << " at " << c.now_us;
  }
}

TEST(LookupGraceTest, LateAnswerRetriesOnce) {
  LateAnswer base;
  base.pool_consumed = 256;
  base.admitted_consumed = 128;
  base.drained = LocalWorkDrained::kYes;
  struct Case {
    const char* name;
    LateAnswer answer;
    LateAnswerAction want;
  };
  LateAnswer not_longer = base;
  not_longer.pool_consumed = 128;
  LateAnswer retried = base;
  retried.retry_used = RetryUsed::kYes;
  LateAnswer prefilled = base;
  prefilled.prefill = PrefillSubmitted::kYes;
  LateAnswer images = base;
  images.inputs = RequestInputs::kConditioned;
  LateAnswer draining = base;
  draining.drained = LocalWorkDrained::kNo;
  const Case cases[] = {
      {"longer, drained", base, LateAnswerAction::kRetryNow},
      {"not longer", not_longer, LateAnswerAction::kIgnore},
      {"already retried", retried, LateAnswerAction::kIgnore},
      {"prefill submitted", prefilled, LateAnswerAction::kIgnore},
      {"conditioned inputs keep their decision", images, LateAnswerAction::kIgnore},
      {"restore still draining", draining, LateAnswerAction::kRetryAfterDrain},
  };
  for (const Case& c : cases) EXPECT_EQ(DecideLateAnswer(c.answer), c.want) << c.name;
}

}  // namespace
}  // namespace strata::pool
