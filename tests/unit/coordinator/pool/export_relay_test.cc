// ExportRelay over a real PoolCatalog: a claim of a holding asks its holder
// and waits; the holder's commit grants every waiting claim, its abort or
// its session's end fails them (and forgets the holding), and the deadline
// fails them too but leaves the put to the holder.
#include "coordinator/pool/export_relay.h"

#include <gtest/gtest.h>

#include "coordinator/pool/claim_rules.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSetupLimitMs = 1'000;
constexpr ExportRelay::Ended kCommitted = ExportRelay::Ended::kCommitted;

class ExportRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = Open("gpu-a");
    b_ = Open("gpu-b");
    c_ = Open("gpu-c");
    const Holding held{.key = Key(), .generation = 4, .bucket_digest = history_.bucket_digest(640)};
    ASSERT_TRUE(catalog_
                    .Announce(a_, false, std::span(&held, 1), {},
                              {.page_record_bytes = 4096, .row_segment_bytes = 4096})
                    .ok());
  }
  void TearDown() override { EXPECT_TRUE(catalog_.CheckInvariants().ok()); }
  SessionId Open(const char* uuid) {
    PoolScope scope;
    scope.pool_name = "test-pool";
    scope.rank_plane_bytes = {{1024, 2048}};
    const std::vector<std::string> gpus{uuid};
    return *catalog_.OpenSession(ComputeInstanceId("test-pool", gpus), scope, 64, 0);
  }
  PrefixKey Key() const { return history_.key_at(640); }
  PoolClaim Claim(uint64_t request_id) const { return PoolClaim{request_id, {Key()}}; }
  // Begins `claim` of `session`; the ask when one was made.
  std::optional<ExportRelay::Ask> Begin(SessionId session, uint64_t request_id) {
    std::optional<ExportRelay::Begun> begun = relay_.Begin(catalog_, session, Claim(request_id), 0);
    EXPECT_TRUE(begun.has_value());
    if (!begun.has_value()) return std::nullopt;
    if (auto* ask = std::get_if<ExportRelay::Ask>(&*begun)) return *ask;
    return std::nullopt;
  }

  PoolCatalog catalog_{CatalogLimits{.slot_count = 64, .slot_bytes = 65536}};
  ExportRelay relay_{kSetupLimitMs};
  PrefixHistory history_{testing::Tokens(1000, 3)};
  SessionId a_, b_, c_;
};

TEST_F(ExportRelayTest, TheHoldersCommitGrantsEveryWaitingClaim) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  EXPECT_EQ(ask->holder, a_);
  EXPECT_EQ(ask->ask.ask.key, Key());
  EXPECT_EQ(ask->ask.ask.generation, 4u);
  EXPECT_FALSE(Begin(c_, 9).has_value()) << "a second claim joins the export asked";
  EXPECT_EQ(relay_.counts().waiting, 2u);
  // Another put's end is no export's.
  EXPECT_TRUE(relay_.PutEnded(catalog_, a_, PutId(999), kCommitted, 1).empty());
  ASSERT_TRUE(catalog_.CommitPut(a_, ask->ask.ask.put, 0xabc, 1).ok());
  std::vector<RelayAnswer> answers = relay_.PutEnded(catalog_, a_, ask->ask.ask.put, kCommitted, 1);
  ASSERT_EQ(answers.size(), 2u);
  for (const RelayAnswer& r : answers) {
    EXPECT_TRUE(r.answer.status.ok()) << r.answer.status.ToString();
    ASSERT_EQ(r.answer.records.size(), 1u);
    EXPECT_EQ(r.answer.records[0].checksum, 0xabcu);
    EXPECT_EQ(r.answer.request_id, r.claim.request_id);
    ASSERT_TRUE(catalog_.ReleaseClaim(r.requester, r.answer.claim).ok());
  }
  EXPECT_EQ(answers[0].requester, b_);
  EXPECT_EQ(answers[1].requester, c_);
  const ExportRelayCounts n = relay_.counts();
  EXPECT_EQ(n.started, 1u);
  EXPECT_EQ(n.joined, 1u);
  EXPECT_EQ(n.relayed, 2u);
  EXPECT_EQ(n.waiting, 0u);
}

TEST_F(ExportRelayTest, TheHoldersAbortFailsTheClaimsAndForgetsTheHolding) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  ASSERT_TRUE(catalog_.AbortPut(a_, ask->ask.ask.put).ok());
  std::vector<RelayAnswer> answers =
      relay_.PutEnded(catalog_, a_, ask->ask.ask.put, ExportRelay::Ended::kAborted, 1);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].answer.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(answers[0].answer.request_id, 7u);
  EXPECT_EQ(relay_.counts().refused, 1u);
  EXPECT_FALSE(catalog_.LookupHeld(b_, history_, 0, history_.size()).has_value());
  EXPECT_FALSE(relay_.Begin(catalog_, b_, Claim(8), 2).has_value()) << "no export any more";
}

TEST_F(ExportRelayTest, TheHoldersSessionEndFailsTheClaims) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  ASSERT_TRUE(catalog_.EndSession(a_).ok());
  std::vector<RelayAnswer> answers = relay_.SessionEnded(catalog_, a_);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].requester, b_);
  EXPECT_EQ(answers[0].answer.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(relay_.counts().lost, 1u);
  EXPECT_EQ(catalog_.counts().records, 0u) << "the pending record went with the session";
}

TEST_F(ExportRelayTest, ARequesterThatGoesAwayIsNotAnswered) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  ASSERT_TRUE(catalog_.EndSession(b_).ok());
  EXPECT_TRUE(relay_.SessionEnded(catalog_, b_).empty());
  ASSERT_TRUE(catalog_.CommitPut(a_, ask->ask.ask.put, 1, 1).ok());
  EXPECT_TRUE(relay_.PutEnded(catalog_, a_, ask->ask.ask.put, kCommitted, 1).empty());
  EXPECT_EQ(catalog_.counts().records, 1u) << "the export's record stays pooled";
}

TEST_F(ExportRelayTest, AnExportPastItsDeadlineFailsItsClaimsAndLeavesThePutToTheHolder) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  // The claim's deadline: the setup limit plus the bytes at 8 MiB/s.
  const uint64_t deadline = ManagerClaimBudgetMs(kClaimSetupMs, kSetupLimitMs, ask->ask.ask.bytes);
  EXPECT_TRUE(relay_.Expire(deadline - 1).empty());
  std::vector<RelayAnswer> answers = relay_.Expire(deadline);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].answer.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(relay_.counts().expired, 1u);
  // The holder may still be writing the slots: the put stays its own, and
  // its late commit pools the record (no claim waits any more).
  EXPECT_TRUE(catalog_.PutWritable(a_, ask->ask.ask.put));
  ASSERT_TRUE(catalog_.CommitPut(a_, ask->ask.ask.put, 1, 2).ok());
  EXPECT_TRUE(relay_.PutEnded(catalog_, a_, ask->ask.ask.put, kCommitted, 2).empty());
  EXPECT_EQ(catalog_.counts().records, 1u);
}

TEST_F(ExportRelayTest, AnAbortAfterTheDeadlineStillForgetsTheHolding) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  ASSERT_EQ(relay_.Expire(uint64_t{1} << 40).size(), 1u);
  // A claim meanwhile does not join the expired export (it is arriving).
  EXPECT_FALSE(relay_.Begin(catalog_, c_, Claim(9), 1).has_value());
  ASSERT_TRUE(catalog_.AbortPut(a_, ask->ask.ask.put).ok());
  EXPECT_TRUE(
      relay_.PutEnded(catalog_, a_, ask->ask.ask.put, ExportRelay::Ended::kAborted, 2).empty());
  EXPECT_FALSE(catalog_.LookupHeld(b_, history_, 0, history_.size()).has_value())
      << "the stale holding is forgotten";
  EXPECT_EQ(relay_.counts().refused, 1u);
}

TEST_F(ExportRelayTest, AFailedCommitFailsTheClaimsButKeepsTheHolding) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  std::vector<RelayAnswer> answers =
      relay_.PutEnded(catalog_, a_, ask->ask.ask.put, ExportRelay::Ended::kCommitFailed, 1);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_FALSE(answers[0].answer.status.ok());
  ASSERT_TRUE(catalog_.AbortPut(a_, ask->ask.ask.put).ok());
  EXPECT_TRUE(catalog_.LookupHeld(b_, history_, 0, history_.size()).has_value());
}

TEST_F(ExportRelayTest, AClaimOfAnotherScopeDoesNotJoinAnExport) {
  std::optional<ExportRelay::Ask> ask = Begin(b_, 7);
  ASSERT_TRUE(ask.has_value());
  PoolScope other;
  other.pool_name = "test-pool";
  other.layout[0] = 9;
  other.rank_plane_bytes = {{1024, 2048}};
  const std::vector<std::string> gpus{"gpu-d"};
  const SessionId d = *catalog_.OpenSession(ComputeInstanceId("test-pool", gpus), other, 64, 0);
  // Same tokens, another scope: nothing holds it there, so no export.
  EXPECT_FALSE(relay_.Begin(catalog_, d, Claim(8), 0).has_value());
  EXPECT_EQ(relay_.counts().joined, 0u);
  ASSERT_TRUE(catalog_.AbortPut(a_, ask->ask.ask.put).ok());
}

TEST_F(ExportRelayTest, AnExportThatCannotStartIsAnsweredAtOnce) {
  // The arena cannot hold it: a failed answer now, nothing asked.
  PoolCatalog small{CatalogLimits{.slot_count = 1, .slot_bytes = 4096}};
  PoolScope scope;
  scope.pool_name = "test-pool";
  scope.rank_plane_bytes = {{1024, 2048}};
  const std::vector<std::string> gpu_a{"a"}, gpu_b{"b"};
  const SessionId a = *small.OpenSession(ComputeInstanceId("test-pool", gpu_a), scope, 64, 0);
  const SessionId b = *small.OpenSession(ComputeInstanceId("test-pool", gpu_b), scope, 64, 0);
  const Holding held{.key = Key(), .generation = 1, .bucket_digest = {}};
  ASSERT_TRUE(small
                  .Announce(a, false, std::span(&held, 1), {},
                            {.page_record_bytes = 4096, .row_segment_bytes = 4096})
                  .ok());
  std::optional<ExportRelay::Begun> begun = relay_.Begin(small, b, Claim(3), 0);
  ASSERT_TRUE(begun.has_value());
  const auto* answer = std::get_if<PoolClaimAnswer>(&*begun);
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->status.code(), StatusCode::kInvalidArgument) << answer->status.ToString();
  EXPECT_EQ(answer->request_id, 3u);
  EXPECT_EQ(relay_.counts().started, 0u);
}

}  // namespace
}  // namespace strata::pool
