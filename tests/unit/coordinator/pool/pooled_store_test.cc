// Two instances and a manager in one process, over the manager's real socket
// and arena: records that instance A evicts from its only (memory) tier reach
// the pool, and instance B restores them byte-exact through its ordinary
// restore path (the synthetic runtime checks every restored byte); after A
// has gone B still restores them; another layout fingerprint shares nothing;
// without a manager an instance runs on its local tier alone.
#include "coordinator/pool/pooled_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "coordinator/pool/pool_server.h"
#include "tests/unit/coordinator/pool/pooled_test_instance.h"

namespace strata::pool {
namespace {

using pooled_test::Instance;
using pooled_test::InstanceOptions;
using pooled_test::kConversations;
using pooled_test::kConversationTokens;
using pooled_test::ManualClock;

class PooledStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-pooled-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    StartManager(/*generation=*/5);
  }
  // A manager on the fixture's socket; the previous one stops first.
  void StartManager(uint64_t generation) {
    server_.reset();
    PoolServerOptions options = pooled_test::ManagerOptions(dir_);
    options.arena_path = arena_path_;
    auto server = PoolServer::Start(options, generation);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_.reset();
    if (!arena_path_.empty()) {
      (void)::unlink(arena_path_.c_str());
      (void)::unlink((arena_path_ + ".generation").c_str());
    }
    ::rmdir(dir_.c_str());
  }
  InstanceOptions Options(std::string source) const {
    return {.socket_path = dir_ + "/pool.sock", .source = std::move(source)};
  }
  // Instance "host-a" with a registered arena, on a clock the test moves.
  InstanceOptions Registered(const ManualClock& clock) const {
    InstanceOptions o = Options("host-a");
    o.clock = clock.AsStoreClock();
    o.registration = ArenaRegistration::kRegistered;
    return o;
  }

  std::string dir_;
  std::string arena_path_;  // empty: the manager's arena is a memfd
  std::unique_ptr<PoolServer> server_;
};

TEST_F(PooledStoreTest, EvictedRecordsReachThePoolAndAnotherInstanceRestoresThem) {
  Instance a(Options("host-a"));
  ASSERT_TRUE(a.pooled->link().sharing());
  a.Compute();
  const PoolInstanceStats put = a.pooled->pool_stats();
  EXPECT_GT(a.memory->Stats().memory.evicted_total, 0u);
  EXPECT_GT(put.puts, 0u) << "evicted records went to the manager";
  EXPECT_EQ(put.dropped_end_of_chain, 0u);

  Instance b(Options("host-b"));
  std::vector<uint32_t> convs(kConversations);
  for (uint32_t& c : convs) c = b.runtime->NewConversation();
  // Conversation 0 was the first A evicted: only the pool holds it.
  TurnReport t = *b.runtime->Turn(convs[0], kConversationTokens + 5);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(t.computed_tokens, 5u);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
  EXPECT_GT(b.runtime->stats().restored_bytes, 0u);
  const PoolInstanceStats claimed = b.pooled->pool_stats();
  EXPECT_EQ(claimed.claims, 1u);
  EXPECT_EQ(claimed.claim_failures, 0u);
  EXPECT_GT(claimed.claimed_bytes, 0u);
}

TEST_F(PooledStoreTest, AMultiTurnConversationIsSharedWholeChain) {
  Instance a(Options("host-a"));
  const uint32_t conv = a.runtime->NewConversation();
  ASSERT_TRUE(a.runtime->Turn(conv, kConversationTokens).ok());
  ASSERT_TRUE(a.runtime->WaitForStores().ok());
  ASSERT_TRUE(a.runtime->Turn(conv, kConversationTokens).ok());  // a child record
  ASSERT_TRUE(a.runtime->WaitForStores().ok());
  a.Compute();  // evicts both records of `conv`, the child first
  ASSERT_GE(a.pooled->pool_stats().puts, 2u);

  Instance b(Options("host-b"));
  TurnReport t = *b.runtime->Turn(b.runtime->NewConversation(), 2 * kConversationTokens + 5);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, 2 * kConversationTokens);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
  EXPECT_EQ(b.pooled->pool_stats().claimed_records, 2u);
}

TEST_F(PooledStoreTest, CascadedRecordsOutliveTheInstanceThatPutThem) {
  {
    Instance a(Options("host-a"));
    a.Compute();
    ASSERT_GT(a.pooled->pool_stats().puts, 0u);
  }  // A exits: its session ends; cascaded records stay
  Instance b(Options("host-b"));
  const uint32_t c = b.runtime->NewConversation();
  TurnReport t = *b.runtime->Turn(c, kConversationTokens + 5);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
}

TEST_F(PooledStoreTest, AnotherLayoutFingerprintSharesNothing) {
  Instance a(Options("host-a"));
  a.Compute();
  ASSERT_GT(a.pooled->pool_stats().puts, 0u);
  InstanceOptions other = Options("host-c");
  other.layout_salt = 0x5a;
  Instance c(other);
  ASSERT_TRUE(c.pooled->link().sharing());
  const uint32_t conv = c.runtime->NewConversation();
  TurnReport t = *c.runtime->Turn(conv, kConversationTokens + 5);
  EXPECT_FALSE(t.host_hit);
  EXPECT_EQ(t.computed_tokens, kConversationTokens + 5);
  EXPECT_GT(c.pooled->pool_stats().lookups, 0u);
  EXPECT_EQ(c.pooled->pool_stats().claims, 0u);
}

TEST_F(PooledStoreTest, WithoutAManagerTheInstanceStaysLocal) {
  InstanceOptions o = Options("host-a");
  o.socket_path = dir_ + "/absent.sock";
  // Each reading of the clock is 10 s later: the first failed attempt is
  // at the startup deadline, so the instance gives up without waiting.
  auto fake_now = std::make_shared<std::chrono::steady_clock::time_point>();
  o.clock.steady = [fake_now] {
    return *fake_now += std::chrono::milliseconds(kStartupAttachWaitMs);
  };
  Instance a(o);
  EXPECT_EQ(a.pooled->link().phase(), AttachPhase::kLocalForever);
  a.Compute();
  EXPECT_GT(a.memory->Stats().memory.evicted_total, 0u);
  const PoolInstanceStats s = a.pooled->pool_stats();
  EXPECT_EQ(s.lookups, 0u);
  EXPECT_EQ(s.puts, 0u);
  EXPECT_FALSE(s.attached);
  EXPECT_EQ(s.dropped_end_of_chain, a.memory->Stats().memory.evicted_total);
}

TEST_F(PooledStoreTest, AnAttachedInstanceReconnectsAfterTheManagerRestarts) {
  ManualClock clock;
  InstanceOptions o = Options("host-a");
  o.clock = clock.AsStoreClock();
  Instance a(o);
  ASSERT_TRUE(a.pooled->link().sharing());
  StartManager(/*generation=*/6);  // the old connection is closed
  a.Compute();                     // the first exchange finds the connection gone
  const PoolInstanceStats lost = a.pooled->pool_stats();
  EXPECT_EQ(lost.puts, 0u);
  // Evicted while disconnected: parked, not dropped.
  EXPECT_GT(lost.parked_records, 0u);
  EXPECT_EQ(lost.dropped_end_of_chain, 0u);
  EXPECT_EQ(lost.reconnects, 0u);  // the reconnect interval has not passed
  clock.Advance(std::chrono::milliseconds(1'000));
  a.Compute();
  ASSERT_TRUE(a.pooled->FlushPuts(std::chrono::seconds(10)));
  const PoolInstanceStats back = a.pooled->pool_stats();
  EXPECT_EQ(back.reconnects, 1u);
  EXPECT_TRUE(back.attached);
  // What was parked through the restart reached the new manager.
  EXPECT_GE(back.puts, lost.parked_records);
  EXPECT_EQ(back.parked_records, 0u);
  EXPECT_EQ(back.dropped_end_of_chain, 0u);
}

TEST_F(PooledStoreTest, RegisteredMemoryDisablesSharingWhenTheGenerationChanges) {
  ManualClock clock;
  Instance a(Registered(clock));
  ASSERT_TRUE(a.pooled->link().sharing());
  StartManager(/*generation=*/6);
  a.Compute();
  clock.Advance(std::chrono::milliseconds(1'000));
  a.Compute();  // reconnects, sees another generation, and stops sharing
  EXPECT_FALSE(a.pooled->link().sharing());
  const PoolInstanceStats s = a.pooled->pool_stats();
  EXPECT_EQ(s.puts, 0u);
  // What was parked for the old manager is given up, counted.
  EXPECT_EQ(s.parked_records, 0u);
  EXPECT_GT(s.put_abandoned.at("unshared"), 0u);
  EXPECT_EQ(s.dropped_end_of_chain, a.memory->Stats().memory.evicted_total);
  EXPECT_EQ(a.pooled->link().phase(), AttachPhase::kAttached);
}

TEST_F(PooledStoreTest, RegisteredMemoryKeepsSharingAcrossARestartOnANamedArena) {
  server_.reset();
  arena_path_ = dir_ + "/arena";
  StartManager(/*generation=*/5);
  ASSERT_FALSE(server_->reopened());
  ManualClock clock;
  Instance a(Registered(clock));
  ASSERT_TRUE(a.pooled->link().sharing());
  StartManager(/*generation=*/6);  // the same file and sizes: the stamp's generation
  EXPECT_TRUE(server_->reopened());
  EXPECT_EQ(server_->generation(), 5u);
  a.Compute();  // finds the connection gone: its evictions wait parked
  clock.Advance(std::chrono::milliseconds(1'000));
  a.Compute();  // reconnects to the same generation and keeps its mapping
  EXPECT_TRUE(a.pooled->link().sharing());
  const PoolInstanceStats put = a.pooled->pool_stats();
  EXPECT_EQ(put.reconnects, 1u);
  EXPECT_GT(put.puts, 0u);
  EXPECT_EQ(put.parked_records, 0u);

  // B maps the restarted manager's fd; A wrote through its old mapping of
  // the same memory: B restores A's first conversation byte-exact.
  Instance b(Options("host-b"));
  TurnReport t = *b.runtime->Turn(b.runtime->NewConversation(), kConversationTokens + 5);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
  EXPECT_EQ(b.pooled->pool_stats().claim_failures, 0u);
}

}  // namespace
}  // namespace strata::pool
