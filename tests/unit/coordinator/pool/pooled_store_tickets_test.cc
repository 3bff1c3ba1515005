// Lookup tickets through real objects (seed 2.15, "Lookups"; docs/pool.md),
// with the relay fixture (pooled_relay_fixture.h) holding B's lookup
// answers, so that an answer comes after B's admission by construction.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "coordinator/pool/lookup_grace.h"
#include "tests/unit/coordinator/pool/pooled_relay_fixture.h"

namespace strata::pool {
namespace {

using pooled_test::kConversationTokens;
using pooled_test::kEventBound;
using pooled_test::kGrace;
using strata::testing::IsPoolMessage;
using strata::testing::PoolHop;

class PooledStoreTicketsTest : public pooled_test::PooledRelayTest {};

TEST_F(PooledStoreTicketsTest, AReadyTicketAdmitsWithThePoolWithoutWaiting) {
  const LookupTicket t = b().BeginLookup(h(), 0, h().size());
  ASSERT_NE(t, LookupTicket{});
  ASSERT_TRUE(PollUntilReady(t));
  EXPECT_EQ(b().TicketStatus(t).pool_consumed, kConversationTokens);
  clock_.Advance(std::chrono::milliseconds(60'000));  // however long it queued
  std::optional<HostHit> hit = b().LookupFor(t, h(), 0, h().size());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->endpoint, h().key_at(kConversationTokens));
  const PoolInstanceStats s = b().pool_stats();
  EXPECT_EQ(s.claims, 0u) << "admission claims nothing: the Fetch does";
  EXPECT_EQ(s.lookup_waits, 0u);
  EXPECT_EQ(s.lookup_failures, 0u);
  EXPECT_FALSE(b().TicketStatus(t).answered_late);
  b().EndLookup(t);
  EXPECT_EQ(b().TicketStatus(t).state, LookupTicketState::kNone);
}

TEST_F(PooledStoreTicketsTest, ALateLongerAnswerRetriesAdmissionOnceAndRestoresByteExact) {
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolLookupAnswer>);
  const LookupTicket t = b().BeginLookup(h(), 0, h().size());
  ASSERT_NE(t, LookupTicket{});
  // Admission after the grace: it goes on local results (none) at once.
  clock_.Advance(kGrace + std::chrono::milliseconds(1));
  EXPECT_FALSE(b().LookupFor(t, h(), 0, h().size()).has_value());
  EXPECT_EQ(b().TicketStatus(t).state, LookupTicketState::kPending);
  EXPECT_EQ(b().pool_stats().lookup_waits, 0u);
  EXPECT_EQ(b().pool_stats().lookup_failures, 1u);
  // A later admission before the answer does not wait either.
  EXPECT_FALSE(b().LookupFor(t, h(), 0, h().size()).has_value());

  proxy_->ReleaseHeld();
  ASSERT_TRUE(PollUntilReady(t));
  LookupTicketStatus st = b().TicketStatus(t);
  EXPECT_TRUE(st.answered_late);
  EXPECT_EQ(st.pool_consumed, kConversationTokens);
  EXPECT_EQ(b().pool_stats().late_answers, 1u);
  const LateAnswer late{.pool_consumed = st.pool_consumed,
                        .admitted_consumed = st.admitted_consumed};
  ASSERT_EQ(DecideLateAnswer(late), LateAnswerAction::kRetryAfterDrain);

  // The retry answers with the pool's chain; its Fetch claims and imports it.
  std::optional<HostHit> hit = b().LookupFor(t, h(), 0, h().size());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->endpoint.consumed, kConversationTokens);
  EXPECT_EQ(b().pool_stats().late_retries, 1u);
  EXPECT_TRUE(b().TicketStatus(t).retry_used);
  const std::optional<StoreEvent> fetched = FetchAndWait(*hit);
  ASSERT_TRUE(fetched.has_value());
  EXPECT_EQ(fetched->kind, StoreEvent::Kind::kFetched) << fetched->status.ToString();
  EXPECT_EQ(b().pool_stats().claims, 1u);
  // Only once: a third admission answers from the local tier, claiming nothing.
  EXPECT_TRUE(b().LookupFor(t, h(), 0, h().size()).has_value());
  EXPECT_EQ(b().pool_stats().claims, 1u);
  b().EndLookup(t);

  // What the retry imported restores byte-exact through B's runtime.
  const uint32_t conv = b_->runtime->NewConversation();
  TurnReport turn = *b_->runtime->Turn(conv, kConversationTokens + 5);
  EXPECT_TRUE(turn.host_hit);
  EXPECT_EQ(turn.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(b_->runtime->stats().mismatches, 0u);
  EXPECT_EQ(b().pool_stats().claims, 1u) << "restored from B's own tier";
}

TEST_F(PooledStoreTicketsTest, APendingTicketHoldsAdmissionAtMostItsGraceOnce) {
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolLookupAnswer>);
  const LookupTicket t = b().BeginLookup(h(), 0, h().size());
  // B's clock stands still: only the real wait (at most the grace) ends it.
  EXPECT_FALSE(b().LookupFor(t, h(), 0, h().size()).has_value());
  EXPECT_EQ(b().pool_stats().lookup_waits, 1u);
  EXPECT_EQ(b().pool_stats().lookup_failures, 1u);
  EXPECT_FALSE(b().LookupFor(t, h(), 0, h().size()).has_value());
  EXPECT_EQ(b().pool_stats().lookup_waits, 1u) << "a later admission never waits";
  b().EndLookup(t);
  proxy_->ReleaseHeld();
  // The ended ticket's answer is dropped; the next lookup gets its own.
  const LookupTicket next = b().BeginLookup(h(), 0, h().size());
  ASSERT_TRUE(PollUntilReady(next));
  EXPECT_EQ(b().pool_stats().late_answers, 0u);
  EXPECT_TRUE(b().LookupFor(next, h(), 0, h().size()).has_value());
  b().EndLookup(next);
}

TEST_F(PooledStoreTicketsTest, ALostConnectionReadiesPendingTicketsWithNothing) {
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolLookupAnswer>);
  const LookupTicket t = b().BeginLookup(h(), 0, h().size());
  proxy_.reset();  // B's connection closes with its answer held
  ASSERT_TRUE(PollUntilReady(t));
  EXPECT_EQ(b().TicketStatus(t).pool_consumed, 0u);
  EXPECT_FALSE(b().LookupFor(t, h(), 0, h().size()).has_value());
  EXPECT_EQ(b().pool_stats().lookup_waits, 0u);
  EXPECT_EQ(b().pool_stats().claims, 0u);
  b().EndLookup(t);
}

TEST_F(PooledStoreTicketsTest, APooledChainOfAnotherHistoryIsIgnored) {
  const LookupTicket t = b().BeginLookup(h(), 0, h().size());
  ASSERT_TRUE(PollUntilReady(t));
  std::vector<Token> other(h().tokens().begin(), h().tokens().end());
  other[0] ^= 1;
  const PrefixHistory wrong(other);
  EXPECT_FALSE(b().LookupFor(t, wrong, 0, wrong.size()).has_value());
  EXPECT_EQ(b().pool_stats().claims, 0u);
  b().EndLookup(t);
}

TEST_F(PooledStoreTicketsTest, EvictionsNeverWaitForThePutAnswersAndGoOnceTheyCome) {
  // Every put answer to B is held: B's evictions must still return.
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolPutAnswer>);
  b_->Compute(/*flush_puts=*/false);
  const uint64_t evicted = b_->memory->Stats().memory.evicted_total;
  ASSERT_GT(evicted, 0u);
  PoolInstanceStats s = b().pool_stats();
  EXPECT_EQ(s.puts, 0u);
  EXPECT_GT(s.parked_records, 0u);
  EXPECT_EQ(s.dropped_end_of_chain, 0u);

  proxy_->ReleaseHeld();
  ASSERT_TRUE(b().FlushPuts(kEventBound));
  s = b().pool_stats();
  EXPECT_EQ(s.parked_records, 0u);
  EXPECT_GE(s.puts, evicted) << "every evicted record reached the manager";
  EXPECT_EQ(s.dropped_end_of_chain, 0u);
}

}  // namespace
}  // namespace strata::pool
