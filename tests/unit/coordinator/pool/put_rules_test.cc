#include "coordinator/pool/put_rules.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

constexpr TierPresence kYes = TierPresence::kPresent;
constexpr TierPresence kNo = TierPresence::kAbsent;

TEST(PutRulesTest, CascadeAcrossConfigurations) {
  using M = ManagerState;
  struct Case {
    ChainShape chain;
    LocalTier from;
    CascadeHop want;
  };
  const Case cases[] = {
      {{kYes, kNo, M::kNone}, LocalTier::kDram, CascadeHop::kEndOfChain},
      {{kYes, kYes, M::kNone}, LocalTier::kDram, CascadeHop::kToNvme},
      {{kYes, kYes, M::kNone}, LocalTier::kNvme, CascadeHop::kEndOfChain},
      {{kNo, kYes, M::kNone}, LocalTier::kNvme, CascadeHop::kEndOfChain},
      {{kYes, kNo, M::kAvailable}, LocalTier::kDram, CascadeHop::kToManager},
      {{kYes, kYes, M::kAvailable}, LocalTier::kDram, CascadeHop::kToNvme},
      {{kYes, kYes, M::kAvailable}, LocalTier::kNvme, CascadeHop::kToManager},
      {{kNo, kYes, M::kAvailable}, LocalTier::kNvme, CascadeHop::kToManager},
      // A busy or lost manager: the local LRU makes room.
      {{kYes, kYes, M::kBusy}, LocalTier::kNvme, CascadeHop::kEndOfChain},
      {{kYes, kNo, M::kUnavailable}, LocalTier::kDram, CascadeHop::kEndOfChain},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NextHop(c.from, c.chain), c.want) << CascadeHopName(c.want);
  }
}

TEST(PutRulesTest, OnlyFourEventsDiscard) {
  struct Case {
    PutEvent event;
    uint32_t failures;
    PutDecision want;
  };
  const Case cases[] = {
      {PutEvent::kAccepted, 0, {PutAction::kReleaseSource, std::nullopt}},
      {PutEvent::kQueueFull, 0, {PutAction::kDelay, std::nullopt}},
      {PutEvent::kRefused, 0, {PutAction::kRetryAfterProgress, std::nullopt}},
      {PutEvent::kManagerLost, 0, {PutAction::kRetryAfterProgress, std::nullopt}},
      {PutEvent::kSubmissionError, 0, {PutAction::kRetryAfterBackoff, std::nullopt}},
      {PutEvent::kTransferFailed, 1, {PutAction::kRetryAfterProgress, std::nullopt}},
      {PutEvent::kTransferFailed, 2, {PutAction::kRetryAfterProgress, std::nullopt}},
      {PutEvent::kTransferFailed, 3, {PutAction::kRetryAfterBackoff, std::nullopt}},
      {PutEvent::kEndOfChainEvict, 0, {PutAction::kDiscard, DropReason::kEndOfChain}},
      {PutEvent::kExpired, 0, {PutAction::kDiscard, DropReason::kExpired}},
      {PutEvent::kOversize, 0, {PutAction::kDiscard, DropReason::kOversize}},
      {PutEvent::kTerminalIoError, 0, {PutAction::kDiscard, DropReason::kIoError}},
  };
  for (const Case& c : cases) {
    const PutDecision d = DecidePut(c.event, c.failures);
    EXPECT_EQ(d, c.want) << PutEventName(c.event) << " -> " << PutActionName(d.action);
    EXPECT_EQ(d.action == PutAction::kDiscard, d.drop.has_value()) << PutEventName(c.event);
  }
}

TEST(PutRulesTest, RetryGates) {
  const RetryGate progress = GateFor(PutAction::kRetryAfterProgress, 7, 1'000);
  EXPECT_FALSE(MayRetry(progress, 7, 1'000'000)) << "time alone never reopens a refusal";
  EXPECT_TRUE(MayRetry(progress, 8, 1'000));

  const RetryGate backoff = GateFor(PutAction::kRetryAfterBackoff, 7, 1'000);
  EXPECT_EQ(backoff.not_before_ms, 1'000 + kPutBackoffMs);
  EXPECT_FALSE(MayRetry(backoff, 7, 1'999));
  EXPECT_TRUE(MayRetry(backoff, 7, 2'000));
  EXPECT_TRUE(MayRetry(backoff, 8, 1'001)) << "manager progress ends a back-off early";
}

}  // namespace
}  // namespace strata::pool
