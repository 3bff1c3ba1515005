// The synthetic runtime over an attach channel: memfd planes shared with a
// rank-like server in a forked process (attach_test_support.h), store calls
// through AttachedStore.
#include "launch/runtime/attached_store.h"

#include <gtest/gtest.h>

#include "launch/runtime/memfd_planes.h"
#include "launch/runtime/synthetic_runtime.h"
#include "tests/unit/attach/attach_test_support.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using attach::testing::Expectation;
using attach::testing::ServerProcess;
using attach::testing::TempSocketPath;

constexpr auto kBound = 10s;

attach::AttachServerOptions Options(const std::string& socket) {
  attach::AttachServerOptions o;
  o.socket_path = socket;
  o.expected = Expectation();
  return o;
}

struct Attached {
  Attached() : socket(TempSocketPath()), server(Options(socket)) {
    const CacheGeometry g = attach::testing::TinyGeometry();
    planes = std::move(*MemfdPlanes::Create(g.ranks[0], g.page_tokens));
    auto client = attach::AttachClient::Attach({.socket_path = socket},
                                               {.runtime_id = "attached-store-test",
                                                .model_identity = attach::testing::kModel,
                                                .state_mode = StateMode::kOrdinary,
                                                .page_tokens = g.page_tokens},
                                               planes->Shared());
    if (client.ok()) store = std::make_unique<AttachedStore>(std::move(*client), kBound);
  }
  std::string socket;
  ServerProcess server;
  std::unique_ptr<MemfdPlanes> planes;
  std::unique_ptr<AttachedStore> store;
};

TEST(AttachedStoreTest, TheSyntheticRuntimeRestoresThroughTheChannelByteExact) {
  Attached a;
  ASSERT_TRUE(a.server.ready());
  ASSERT_NE(a.store, nullptr);
  SyntheticRuntimeOptions options;
  options.wait_bound = kBound;
  SyntheticRuntime rt(*a.planes, a.store.get(), options);
  const uint32_t c = rt.NewConversation();
  Result<TurnReport> first = rt.Turn(c, 300);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->publish, StoreOutcome::kQueued);
  ASSERT_TRUE(rt.WaitForStores().ok());
  EXPECT_EQ(rt.stats().stored, 1u);
  rt.EvictGpu();
  // The turn begins, admits (LookupFor) and ends its ticket over the
  // channel; the server's memory store has no pool, so the admission is a
  // one-step lookup there and still finds the published turn.
  Result<TurnReport> again = rt.Turn(c, 10);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->host_hit);
  EXPECT_EQ(again->host_reused_tokens, 300u);  // the whole published first turn
  EXPECT_EQ(rt.stats().mismatches, 0u);
  EXPECT_GT(rt.stats().restored_bytes, 0u);
  EXPECT_TRUE(a.store->Close().ok());
}

TEST(AttachedStoreTest, AMissAnswersNothingAndAGoneRankReportsStopped) {
  Attached a;
  ASSERT_TRUE(a.server.ready());
  ASSERT_NE(a.store, nullptr);
  const std::vector<Token> tokens(256, 7);
  const PrefixHistory h(tokens);
  EXPECT_FALSE(a.store->Lookup(h, 0, h.size()).has_value());
  ASSERT_EQ(a.server.Stop(), 0);
  std::vector<StoreEvent> events;
  a.store->Poll(0, events);  // the server exited: its end of the socket is closed
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kStopped);
}

TEST(AttachedStoreTest, TwoStepLookupsCrossTheChannelAndAStoreWithoutAPoolKeepsNoTicket) {
  // (The synthetic runtime's turns begin, admit and end their tickets over
  // the channel: the byte-exact restore above goes that way.)
  Attached a;
  ASSERT_TRUE(a.server.ready());
  ASSERT_NE(a.store, nullptr);
  const std::vector<Token> tokens(256, 7);
  const PrefixHistory h(tokens);
  const LookupTicket t = a.store->BeginLookup(h, 0, h.size());
  EXPECT_NE(t, LookupTicket{}) << "the channel's request id names the ticket";
  EXPECT_EQ(a.store->TicketStatus(t).state, LookupTicketState::kNone)
      << "a store without a pool opened none: the rank answers so";
  EXPECT_FALSE(a.store->LookupFor(t, h, 0, h.size()).has_value());
  a.store->EndLookup(t);
  EXPECT_EQ(a.store->TicketStatus(LookupTicket{}).state, LookupTicketState::kNone);
  EXPECT_TRUE(a.store->Close().ok());
}

}  // namespace
}  // namespace strata
