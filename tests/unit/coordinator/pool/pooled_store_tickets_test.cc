// Lookup tickets through real objects (seed 2.15, "Lookups"; docs/pool.md):
// a manager, instance A whose evictions fill the pool, and instance B that
// reaches the manager through a relay (tests/support/pool_proxy.h) holding
// B's lookup answers, so that an answer comes after B's admission by
// construction, not by timing. B's clock is moved by hand.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/pool_server.h"
#include "tests/support/pool_proxy.h"
#include "tests/unit/coordinator/pool/pooled_test_instance.h"

namespace strata::pool {
namespace {

using pooled_test::Instance;
using pooled_test::InstanceOptions;
using pooled_test::kConversationTokens;
using pooled_test::ManualClock;
using strata::testing::IsPoolMessage;
using strata::testing::PoolHop;
using strata::testing::PoolProxy;

constexpr std::chrono::milliseconds kGrace{2};
// Bound on waiting for an event (never a sleep the result depends on).
constexpr std::chrono::seconds kEventBound{10};

class PooledStoreTicketsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-tickets-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    PoolServerOptions options;
    options.name = "shared";
    options.socket_path = dir_ + "/pool.sock";
    options.slot_bytes = 64 * 1024;
    options.slot_count = 512;
    options.huge_pages = HugePages::kNever;
    auto server = PoolServer::Start(options, 5);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto proxy = PoolProxy::Start(dir_ + "/proxy.sock", dir_ + "/pool.sock");
    ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
    proxy_ = std::move(*proxy);

    a_ = std::make_unique<Instance>(
        InstanceOptions{.socket_path = dir_ + "/pool.sock", .source = "host-a"});
    // A's first conversation: its record is evicted to the pool by the rest.
    const uint32_t conv = a_->runtime->NewConversation();
    ASSERT_TRUE(a_->runtime->Turn(conv, kConversationTokens).ok());
    ASSERT_TRUE(a_->runtime->WaitForStores().ok());
    a_->Compute();
    ASSERT_GT(a_->pooled->pool_stats().puts, 0u);
    const std::span<const Token> tokens = a_->runtime->tokens(conv);
    history_ = std::make_unique<PrefixHistory>(tokens.first(kConversationTokens));

    b_ = std::make_unique<Instance>(InstanceOptions{.socket_path = dir_ + "/proxy.sock",
                                                    .source = "host-b",
                                                    .clock = clock_.AsStoreClock(),
                                                    .lookup_grace = kGrace});
    ASSERT_TRUE(b_->pooled->link().sharing());
  }
  void TearDown() override {
    b_.reset();
    a_.reset();
    proxy_.reset();
    server_.reset();
    (void)::unlink((dir_ + "/proxy.sock").c_str());
    ::rmdir(dir_.c_str());
  }

  PooledStore& b() { return *b_->pooled; }
  const PrefixHistory& h() const { return *history_; }
  // Polls B until `ticket` is ready, within kEventBound.
  bool PollUntilReady(LookupTicket ticket) {
    const auto deadline = std::chrono::steady_clock::now() + kEventBound;
    std::vector<StoreEvent> events;
    while (std::chrono::steady_clock::now() < deadline) {
      b().Poll(0, events);
      if (b().TicketStatus(ticket).state == LookupTicketState::kReady) return true;
      std::this_thread::yield();
    }
    return false;
  }

  std::string dir_;
  ManualClock clock_;
  std::unique_ptr<PoolServer> server_;
  std::unique_ptr<PoolProxy> proxy_;
  std::unique_ptr<Instance> a_;
  std::unique_ptr<Instance> b_;
  std::unique_ptr<PrefixHistory> history_;
};

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
  EXPECT_EQ(s.claims, 1u);
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

  // The retry: the pool's chain is claimed and imported.
  std::optional<HostHit> hit = b().LookupFor(t, h(), 0, h().size());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->endpoint.consumed, kConversationTokens);
  EXPECT_EQ(b().pool_stats().claims, 1u);
  EXPECT_EQ(b().pool_stats().late_retries, 1u);
  EXPECT_TRUE(b().TicketStatus(t).retry_used);
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
  EXPECT_EQ(b().pool_stats().claims, 1u);
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
