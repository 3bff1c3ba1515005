// Claims through real objects (seed 2.15, "Claims"; docs/pool.md): admission
// answers with the pool's chain and claims nothing; the claim runs inside the
// Fetch, advanced by Poll on answers that have arrived. The relay fixture
// (pooled_relay_fixture.h) holds B's claim answers, so that a grant comes
// late by construction, and B's clock is moved by hand past the deadline.
#include <gtest/gtest.h>

#include "coordinator/pool/claim_rules.h"
#include "tests/unit/coordinator/pool/pooled_relay_fixture.h"

namespace strata::pool {
namespace {

using pooled_test::kConversationTokens;
using pooled_test::kEventBound;
using strata::testing::IsPoolMessage;
using strata::testing::PoolHop;

class PooledStoreClaimsTest : public pooled_test::PooledRelayTest {
 protected:
  // B's admission of the history A computed: the pool's hit, not claimed.
  HostHit PoolHit() { return PoolHitAbove(h(), 0); }
  // B's admission of `history` with `resident` tokens in its GPU.
  HostHit PoolHitAbove(const PrefixHistory& history, uint64_t resident) {
    const LookupTicket t = b().BeginLookup(history, resident, history.size());
    EXPECT_TRUE(PollUntilReady(t));
    std::optional<HostHit> hit = b().LookupFor(t, history, resident, history.size());
    b().EndLookup(t);
    EXPECT_TRUE(hit.has_value());
    return hit.value_or(HostHit{});
  }
  InboundTicket TicketFor(const HostHit& hit) {
    InboundTicket t;
    t.ticket = JobId(next_ticket_++);
    for (uint64_t i = 0; i < hit.pages; ++i) t.page_ids.emplace_back(static_cast<uint32_t>(i));
    t.row_slot = StateSlot(0);
    return t;
  }
  // Polls B a few times; the events of `ticket` it reported.
  size_t EventsFor(JobId ticket) {
    std::vector<StoreEvent> events;
    for (int i = 0; i < 20; ++i) b().Poll(0, events);
    size_t n = 0;
    for (const StoreEvent& e : events) n += e.ticket == ticket ? 1 : 0;
    return n;
  }
  // Polls B until the manager holds `claims` claims, within kEventBound.
  bool PollUntilClaimsHeld(uint64_t claims) {
    const auto deadline = std::chrono::steady_clock::now() + kEventBound;
    std::vector<StoreEvent> events;
    while (std::chrono::steady_clock::now() < deadline) {
      b().Poll(0, events);
      if (server_->Stats().catalog.claims_in_flight == claims) return true;
      std::this_thread::yield();
    }
    return false;
  }
  bool PollUntilNoClaimHeld() { return PollUntilClaimsHeld(0); }
  // Fetches `hit` into `ticket` with B's claim copier held, and polls B
  // until the grant reached the copier (the copy is then out, held).
  bool StartHeldCopy(const HostHit& hit, InboundTicket& ticket) {
    ticket = TicketFor(hit);
    b().claim_copier().SetHeld(true);
    if (!b().Fetch(hit, ticket).ok()) return false;
    const auto deadline = std::chrono::steady_clock::now() + kEventBound;
    std::vector<StoreEvent> events;
    while (b().claim_copier().pending() == 0 && std::chrono::steady_clock::now() < deadline) {
      b().Poll(0, events);
      std::this_thread::yield();
    }
    return b().claim_copier().pending() == 1 && events.empty();
  }
  InboundTicket ticket_;
};

TEST_F(PooledStoreClaimsTest, AdmissionAnswersThePoolsChainSizedLikeTheLandingTiersHit) {
  const HostHit hit = PoolHit();
  EXPECT_EQ(hit.endpoint, h().key_at(kConversationTokens));
  EXPECT_EQ(hit.pages, kConversationTokens / b_->geometry.page_tokens);
  EXPECT_EQ(hit.skip_pages, 0u);
  EXPECT_EQ(hit.tokens_gained, kConversationTokens);
  EXPECT_EQ(b().pool_stats().claims, 0u);
  EXPECT_EQ(server_->Stats().traffic.claims, 0u) << "the manager saw no claim yet";

  const std::optional<StoreEvent> done = FetchAndWait(hit);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, StoreEvent::Kind::kFetched) << done->status.ToString();
  // Landed: B's memory tier now answers the same hit itself.
  const std::optional<HostHit> local = b_->memory->Lookup(h(), 0, h().size());
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->chain, hit.chain);
  EXPECT_EQ(local->pages, hit.pages);
  EXPECT_EQ(local->skip_pages, hit.skip_pages);
  EXPECT_EQ(local->bytes, hit.bytes);
  const PoolInstanceStats s = b().pool_stats();
  EXPECT_EQ(s.claims, 1u);
  EXPECT_EQ(s.claims_in_flight, 0u);
  EXPECT_EQ(s.claimed_records, hit.chain.size());
  EXPECT_TRUE(PollUntilNoClaimHeld()) << "the claim was released";
}

// B's GPU holds the first record's tokens, which B's landing tier lacks: the
// claim carries that record too (an import lands only on a parent the tier
// holds), and the restore skips its pages.
TEST_F(PooledStoreClaimsTest, AClaimAboveGpuHeldPagesCarriesTheRecordTheLandingTierLacks) {
  const uint32_t conv = a_->runtime->NewConversation();
  ASSERT_TRUE(a_->runtime->Turn(conv, kConversationTokens).ok());
  ASSERT_TRUE(a_->runtime->WaitForStores().ok());
  ASSERT_TRUE(a_->runtime->Turn(conv, kConversationTokens).ok());
  ASSERT_TRUE(a_->runtime->WaitForStores().ok());
  a_->Compute();  // evicts both records of `conv` to the pool
  const PrefixHistory two(a_->runtime->tokens(conv).first(2 * kConversationTokens));
  const uint64_t page_tokens = b_->geometry.page_tokens;

  const HostHit hit = PoolHitAbove(two, kConversationTokens);
  ASSERT_EQ(hit.chain.size(), 2u) << "the GPU-held record comes with the claim";
  EXPECT_EQ(hit.chain[0], two.key_at(kConversationTokens));
  EXPECT_EQ(hit.endpoint, two.key_at(2 * kConversationTokens));
  EXPECT_EQ(hit.skip_pages, kConversationTokens / page_tokens);
  EXPECT_EQ(hit.pages, kConversationTokens / page_tokens);
  EXPECT_EQ(hit.tokens_gained, kConversationTokens);

  const std::optional<StoreEvent> done = FetchAndWait(hit);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, StoreEvent::Kind::kFetched) << done->status.ToString();
  EXPECT_EQ(b().pool_stats().claimed_records, 2u);
  // Landed as a chain: B's memory tier answers the same restore itself.
  const std::optional<HostHit> local = b_->memory->Lookup(two, kConversationTokens, two.size());
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->chain, std::vector<PrefixKey>{hit.endpoint});
  EXPECT_EQ(local->pages, hit.pages);

  // Now that B's landing tier holds the first record, a claim of the chain
  // starts above it.
  ASSERT_TRUE(b_->memory->Holds(two.key_at(kConversationTokens)));
}

TEST_F(PooledStoreClaimsTest, AFetchNeverWaitsForTheGrantAndLandsWhenItComes) {
  const HostHit hit = PoolHit();
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolClaimAnswer>);
  const InboundTicket ticket = TicketFor(hit);
  ASSERT_TRUE(b().Fetch(hit, ticket).ok());
  EXPECT_EQ(EventsFor(ticket.ticket), 0u) << "no grant yet: nothing lands, nothing fails";
  EXPECT_EQ(b().pool_stats().claims_in_flight, 1u);

  proxy_->ReleaseHeld();
  const std::optional<StoreEvent> done = WaitForFetch(ticket.ticket);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, StoreEvent::Kind::kFetched) << done->status.ToString();
  EXPECT_EQ(b().pool_stats().claims, 1u);
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
}

TEST_F(PooledStoreClaimsTest, CloseEndsAClaimNotLandedWithAFailedFetch) {
  const HostHit hit = PoolHit();
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolClaimAnswer>);
  const InboundTicket ticket = TicketFor(hit);
  ASSERT_TRUE(b().Fetch(hit, ticket).ok());
  EXPECT_EQ(EventsFor(ticket.ticket), 0u);
  ASSERT_TRUE(b().Close().ok());
  std::vector<StoreEvent> events;
  b().Poll(0, events);
  ASSERT_EQ(events.size(), 1u) << "the ticket ends, it does not wait forever";
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_EQ(events[0].ticket, ticket.ticket);
  EXPECT_EQ(events[0].status.code(), StatusCode::kAborted) << events[0].status.ToString();
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
  proxy_->ReleaseHeld();
}

TEST_F(PooledStoreClaimsTest, AGrantPastTheDeadlineFailsTheFetchAndIsReleasedWhenItComes) {
  const HostHit hit = PoolHit();
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolClaimAnswer>);
  const InboundTicket ticket = TicketFor(hit);
  ASSERT_TRUE(b().Fetch(hit, ticket).ok());
  ASSERT_TRUE(PollUntilClaimsHeld(1)) << "the manager granted it; the relay holds the grant";
  EXPECT_EQ(EventsFor(ticket.ticket), 0u);
  // claim_rules: the requester allows 12 s plus the allowance for its bytes.
  clock_.Advance(std::chrono::milliseconds(RequesterClaimBudgetMs(hit.bytes, 0) + 1));
  const std::optional<StoreEvent> failed = WaitForFetch(ticket.ticket);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_EQ(failed->status.code(), StatusCode::kAborted) << failed->status.ToString();
  EXPECT_EQ(b().pool_stats().claim_failures, 1u);
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
  EXPECT_EQ(b().pool_stats().claims_failed_held, 1u) << "kept until its grant can be released";

  // The grant comes after all: released at once, nothing lands, no second event.
  proxy_->ReleaseHeld();
  EXPECT_TRUE(PollUntilNoClaimHeld());
  EXPECT_EQ(EventsFor(ticket.ticket), 0u);
  EXPECT_EQ(b().pool_stats().claims, 0u);
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
  EXPECT_EQ(b().pool_stats().claims_failed_held, 0u);
  EXPECT_FALSE(b_->memory->Lookup(h(), 0, h().size()).has_value());
}

TEST_F(PooledStoreClaimsTest, ADeadlinePassingDuringTheCopyFailsTheFetchAndReleasesAfterTheCopy) {
  const HostHit hit = PoolHit();
  ASSERT_TRUE(StartHeldCopy(hit, ticket_));
  // The copy is out (held on the copier's thread); the deadline passes.
  clock_.Advance(std::chrono::milliseconds(RequesterClaimBudgetMs(hit.bytes, 0) + 1));
  const std::optional<StoreEvent> failed = WaitForFetch(ticket_.ticket);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_EQ(failed->status.code(), StatusCode::kAborted) << failed->status.ToString();
  EXPECT_EQ(server_->Stats().catalog.claims_in_flight, 1u)
      << "not released while the copy may still read its slots";
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
  EXPECT_EQ(b().pool_stats().claims_failed_held, 1u);

  b().claim_copier().SetHeld(false);
  EXPECT_TRUE(PollUntilNoClaimHeld()) << "released once the copy came back";
  EXPECT_EQ(EventsFor(ticket_.ticket), 0u) << "the copy that came back lands nothing";
  EXPECT_EQ(b().pool_stats().claims, 0u);
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
  EXPECT_EQ(b().pool_stats().claims_failed_held, 0u);
  EXPECT_FALSE(b_->memory->Lookup(h(), 0, h().size()).has_value()) << "nothing imported";
}

TEST_F(PooledStoreClaimsTest, ALostConnectionDuringTheCopyFailsTheFetchOnce) {
  const HostHit hit = PoolHit();
  ASSERT_TRUE(StartHeldCopy(hit, ticket_));
  proxy_.reset();  // B's connection closes while its copy is out
  const std::optional<StoreEvent> failed = WaitForFetch(ticket_.ticket);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_EQ(failed->status.code(), StatusCode::kUnavailable) << failed->status.ToString();
  b().claim_copier().SetHeld(false);
  const auto deadline = std::chrono::steady_clock::now() + kEventBound;
  while (b().claim_copier().pending() != 0 && std::chrono::steady_clock::now() < deadline) {
    EXPECT_EQ(EventsFor(ticket_.ticket), 0u) << "no second event";
  }
  EXPECT_EQ(b().claim_copier().pending(), 0u) << "the copy came back and was dropped";
  EXPECT_EQ(b().pool_stats().claims, 0u);
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
  EXPECT_EQ(b().pool_stats().claims_failed_held, 0u);
  EXPECT_FALSE(b_->memory->Lookup(h(), 0, h().size()).has_value()) << "nothing imported";
}

TEST_F(PooledStoreClaimsTest, ALostConnectionFailsThePendingClaim) {
  const HostHit hit = PoolHit();
  proxy_->Hold(PoolHop::kToInstance, &IsPoolMessage<PoolClaimAnswer>);
  const InboundTicket ticket = TicketFor(hit);
  ASSERT_TRUE(b().Fetch(hit, ticket).ok());
  ASSERT_TRUE(PollUntilClaimsHeld(1));
  proxy_.reset();  // B's connection closes with the grant held
  const std::optional<StoreEvent> failed = WaitForFetch(ticket.ticket);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_EQ(b().pool_stats().claim_failures, 1u);
  EXPECT_EQ(b().pool_stats().claims_in_flight, 0u);
  // The session's end released the manager's hold.
  const auto deadline = std::chrono::steady_clock::now() + kEventBound;
  while (server_->Stats().catalog.claims_in_flight != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(server_->Stats().catalog.claims_in_flight, 0u);
}

TEST_F(PooledStoreClaimsTest, AClaimOfACorruptSlotFailsTheFetchAndImportsNothing) {
  const HostHit hit = PoolHit();
  // Flip a byte of every slot the pool uses: whatever the chain's slots are.
  const Arena& arena = a_->pooled->link().connected()->arena();
  for (uint32_t s = 0; s < arena.slot_count(); ++s) {
    arena.Slot(SlotId(s))[200] ^= std::byte{0x5a};
  }
  const std::optional<StoreEvent> done = FetchAndWait(hit);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_EQ(done->status.code(), StatusCode::kCorruption) << done->status.ToString();
  EXPECT_EQ(b().pool_stats().claims, 0u);
  EXPECT_EQ(b().pool_stats().claim_failures, 1u);
  EXPECT_FALSE(b_->memory->Lookup(h(), 0, h().size()).has_value()) << "nothing imported";
  EXPECT_TRUE(PollUntilNoClaimHeld()) << "released after the failed copy";
}

}  // namespace
}  // namespace strata::pool
