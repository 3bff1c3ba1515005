#include "coordinator/pool/lookup_tickets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::pool {
namespace {

constexpr uint64_t kConn = 1;
constexpr uint64_t kBegun = 1'000'000;

std::vector<PrefixKey> ChainTo(uint64_t consumed) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[0] = static_cast<uint8_t>(consumed);
  return {k};
}

// One admission step of a table test: the answer (if any) arrives, then
// admission runs at `admit_us` after the begin.
struct Step {
  std::string name;
  bool answered = false;  // the answer is filed before admission
  uint64_t admit_after_us = 0;
  AdmissionLookup want;
  uint64_t want_wait_us = 0;
};

TEST(LookupTicketsTest, FirstAdmission) {
  const Step steps[] = {
      {"ready at once", true, 0, AdmissionLookup::kWithPool, 0},
      {"ready long after", true, 60'000'000, AdmissionLookup::kWithPool, 0},
      {"pending at once waits the whole grace", false, 0, AdmissionLookup::kWait, 2'000},
      {"pending inside the grace waits the rest", false, 1'500, AdmissionLookup::kWait, 500},
      {"pending at the grace goes local", false, 2'000, AdmissionLookup::kLocalOnly, 0},
      {"pending past the grace goes local", false, 9'000, AdmissionLookup::kLocalOnly, 0},
  };
  for (const Step& s : steps) {
    LookupTickets table(kLocalGraceUs);
    const std::optional<LookupTicket> t = table.Begin(kConn, 7, kBegun);
    ASSERT_TRUE(t.has_value());
    if (s.answered) {
      ASSERT_TRUE(table.Answer(kConn, 7, ChainTo(128)).has_value());
    }
    const uint64_t now = kBegun + s.admit_after_us;
    EXPECT_EQ(table.Admit(*t, now), s.want) << s.name;
    EXPECT_EQ(table.WaitLeftUs(*t, now), s.want_wait_us) << s.name;
  }
}

TEST(LookupTicketsTest, ANewGraceAppliesToTicketsAlreadyOpen) {
  LookupTickets table(kLocalGraceUs);
  const LookupTicket t = *table.Begin(kConn, 3, kBegun);
  EXPECT_EQ(table.Admit(t, kBegun + 2'500), AdmissionLookup::kLocalOnly);
  // A reconnect to a network manager measured 10 ms round trips.
  table.set_grace_us(LookupGraceUs(ManagerPlace::kNetwork, 10'000));
  EXPECT_EQ(table.grace_us(), 40'000u);
  EXPECT_EQ(table.Admit(t, kBegun + 2'500), AdmissionLookup::kWait);
  EXPECT_EQ(table.Admit(t, kBegun + 40'000), AdmissionLookup::kLocalOnly);
}

TEST(LookupTicketsTest, ALateAnswerServesOneRetry) {
  LookupTickets table(kLocalGraceUs);
  const LookupTicket t = *table.Begin(kConn, 3, kBegun);
  // Admission past the grace: local, 64 tokens from a local tier.
  ASSERT_EQ(table.Admit(t, kBegun + 2'500), AdmissionLookup::kLocalOnly);
  table.Admitted(t, AdmissionLookup::kLocalOnly, 64);
  EXPECT_EQ(table.use(t), TicketUse::kAdmittedEarly);
  // Before the answer, a later admission does not wait: local.
  EXPECT_EQ(table.Admit(t, kBegun + 2'600), AdmissionLookup::kLocalOnly);
  EXPECT_EQ(table.Status(t).state, LookupTicketState::kPending);

  ASSERT_TRUE(table.Answer(kConn, 3, ChainTo(192)).has_value());
  LookupTicketStatus st = table.Status(t);
  EXPECT_EQ(st.state, LookupTicketState::kReady);
  EXPECT_EQ(st.pool_consumed, 192u);
  EXPECT_EQ(st.admitted_consumed, 64u);
  EXPECT_EQ(st.admissions, 1u);
  EXPECT_TRUE(st.answered_late);
  EXPECT_FALSE(st.retry_used);
  // The retry: pool candidates, however late.
  EXPECT_EQ(table.Admit(t, kBegun + 90'000'000), AdmissionLookup::kWithPool);
  table.Admitted(t, AdmissionLookup::kWithPool, 192);
  st = table.Status(t);
  EXPECT_TRUE(st.retry_used);
  EXPECT_EQ(st.admissions, 2u);
  // Only once.
  EXPECT_EQ(table.Admit(t, kBegun + 90'000'001), AdmissionLookup::kLocalOnly);
}

TEST(LookupTicketsTest, AnAdmissionWithTheAnswerHasNoLateRetryButMayAdmitAgain) {
  LookupTickets table(kLocalGraceUs);
  const LookupTicket t = *table.Begin(kConn, 3, kBegun);
  ASSERT_TRUE(table.Answer(kConn, 3, ChainTo(128)).has_value());
  table.Admitted(t, table.Admit(t, kBegun), 128);
  EXPECT_EQ(table.use(t), TicketUse::kAdmittedPool);
  // A request that waited on capacity admits again with the same answer.
  EXPECT_EQ(table.Admit(t, kBegun + 5'000'000), AdmissionLookup::kWithPool);
  table.Admitted(t, AdmissionLookup::kWithPool, 128);
  EXPECT_FALSE(table.Status(t).retry_used);
  EXPECT_FALSE(table.Status(t).answered_late) << "no late retry for an answer admission had";
}

TEST(LookupTicketsTest, AnswersMatchTheirConnectionAndRequestOnce) {
  LookupTickets table(kLocalGraceUs);
  const LookupTicket t = *table.Begin(kConn, 5, kBegun);
  EXPECT_FALSE(table.Answer(kConn + 1, 5, ChainTo(64)).has_value()) << "another connection";
  EXPECT_FALSE(table.Answer(kConn, 6, ChainTo(64)).has_value()) << "another request";
  EXPECT_EQ(table.Answer(kConn, 5, ChainTo(64)), t);
  EXPECT_FALSE(table.Answer(kConn, 5, ChainTo(128)).has_value()) << "answered already";
  EXPECT_EQ(table.Status(t).pool_consumed, 64u);
  ASSERT_NE(table.chain(t), nullptr);
  EXPECT_EQ(table.chain(t)->back().consumed, 64u);
}

TEST(LookupTicketsTest, ALostConnectionReadiesItsPendingTicketsWithNothing) {
  LookupTickets table(kLocalGraceUs);
  const LookupTicket old_conn = *table.Begin(1, 5, kBegun);
  const LookupTicket live = *table.Begin(2, 1, kBegun);
  EXPECT_EQ(table.FailPending(2), 1u);
  EXPECT_EQ(table.Status(old_conn).state, LookupTicketState::kReady);
  EXPECT_EQ(table.chain(old_conn), nullptr);
  // Ready with nothing: admission goes at once, without waiting.
  EXPECT_EQ(table.Admit(old_conn, kBegun), AdmissionLookup::kWithPool);
  EXPECT_EQ(table.WaitLeftUs(old_conn, kBegun), 0u);
  EXPECT_EQ(table.Status(live).state, LookupTicketState::kPending);
  // Its answer, if it came now, is dropped.
  EXPECT_FALSE(table.Answer(1, 5, ChainTo(64)).has_value());
  EXPECT_EQ(table.FailPending(std::nullopt), 1u);
  EXPECT_EQ(table.Status(live).state, LookupTicketState::kReady);
}

TEST(LookupTicketsTest, TheTableIsBoundedAndEndingFreesRoom) {
  LookupTickets table(kLocalGraceUs, 2);
  const LookupTicket a = *table.Begin(kConn, 1, kBegun);
  ASSERT_TRUE(table.Begin(kConn, 2, kBegun).has_value());
  EXPECT_FALSE(table.Begin(kConn, 3, kBegun).has_value());
  const std::optional<LookupTickets::Request> ended = table.End(a);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->request_id, 1u);
  EXPECT_EQ(ended->connection, kConn);
  EXPECT_FALSE(table.End(a).has_value()) << "a second end finds nothing";
  EXPECT_EQ(table.Status(a).state, LookupTicketState::kNone);
  EXPECT_EQ(table.Admit(a, kBegun), AdmissionLookup::kLocalOnly);
  EXPECT_TRUE(table.Begin(kConn, 3, kBegun).has_value());
  EXPECT_EQ(table.open(), 2u);
}

TEST(LookupTicketsTest, PendingRequestNamesTheLiveConnectionsOnly) {
  LookupTickets table(kLocalGraceUs);
  const LookupTicket t = *table.Begin(kConn, 9, kBegun);
  EXPECT_EQ(table.PendingRequest(t, kConn), 9u);
  EXPECT_FALSE(table.PendingRequest(t, kConn + 1).has_value());
  ASSERT_TRUE(table.Answer(kConn, 9, {}).has_value());
  EXPECT_FALSE(table.PendingRequest(t, kConn).has_value());
}

}  // namespace
}  // namespace strata::pool
