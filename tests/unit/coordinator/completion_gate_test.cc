// CompletionGate as a table of link events: which ones wake rank zero's
// owner. The rule under test: only a JobDone of an expected (job, rank) that
// leaves another peer's answer awaited, and a heartbeat, are held.
#include "coordinator/completion_gate.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

// Links tagged 11, 12, 13 belong to ranks 1, 2, 3.
CompletionGate Gate() {
  return CompletionGate({{11, RankId(1)}, {12, RankId(2)}, {13, RankId(3)}});
}

wire::LinkEvent Done(uint64_t tag, uint64_t job, uint32_t rank) {
  wire::LinkEvent e;
  e.tag = tag;
  e.message = wire::JobDone{JobId(job), RankId(rank), Status::Ok(), false, 0};
  return e;
}

wire::LinkEvent Message(uint64_t tag, wire::Message m) {
  wire::LinkEvent e;
  e.tag = tag;
  e.message = std::move(m);
  return e;
}

TEST(CompletionGateTest, OnlyTheLastPeersAnswerOfAJobWakes) {
  CompletionGate g = Gate();
  g.Expect(JobId(7), {RankId(0), RankId(1), RankId(2), RankId(3)});
  EXPECT_FALSE(g.Wakes(Done(12, 7, 2)));
  EXPECT_FALSE(g.Wakes(Done(11, 7, 1)));
  EXPECT_TRUE(g.Wakes(Done(13, 7, 3)));
  EXPECT_EQ(g.jobs(), 0u);
  // The job is forgotten: another answer for it wakes (the owner reports the
  // protocol error).
  EXPECT_TRUE(g.Wakes(Done(11, 7, 1)));
}

TEST(CompletionGateTest, JobsAreCountedApart) {
  CompletionGate g = Gate();
  g.Expect(JobId(1), {RankId(1), RankId(2)});
  g.Expect(JobId(2), {RankId(1), RankId(2)});
  EXPECT_FALSE(g.Wakes(Done(11, 1, 1)));
  EXPECT_FALSE(g.Wakes(Done(11, 2, 1)));
  EXPECT_TRUE(g.Wakes(Done(12, 2, 2)));
  EXPECT_TRUE(g.Wakes(Done(12, 1, 2)));
}

TEST(CompletionGateTest, WhatTheGateCannotAccountForWakes) {
  struct Case {
    const char* name;
    wire::LinkEvent event;
  };
  const std::vector<Case> cases = {
      {"an unknown job", Done(11, 99, 1)},
      {"a rank the job was not sent to", Done(13, 5, 3)},
      {"a rank other than the link's", Done(11, 5, 2)},
      {"a link the gate does not know", Done(40, 5, 1)},
      {"a Drained", Message(11, wire::Drained{})},
      {"a Close", Message(11, wire::Close{"bye"})},
      {"an unexpected Job", Message(11, wire::Job{})},
  };
  for (const Case& c : cases) {
    CompletionGate g = Gate();
    g.Expect(JobId(5), {RankId(1), RankId(2)});
    EXPECT_TRUE(g.Wakes(c.event)) << c.name;
  }
}

TEST(CompletionGateTest, ASecondAnswerFromOneRankWakes) {
  CompletionGate g = Gate();
  g.Expect(JobId(5), {RankId(1), RankId(2)});
  EXPECT_FALSE(g.Wakes(Done(11, 5, 1)));
  EXPECT_TRUE(g.Wakes(Done(11, 5, 1)));
}

TEST(CompletionGateTest, ClosesAndOverflowsWakeAndHeartbeatsDoNot) {
  CompletionGate g = Gate();
  EXPECT_FALSE(g.Wakes(Message(11, wire::Heartbeat{3})));
  wire::LinkEvent closed;
  closed.kind = wire::LinkEvent::Kind::kClosed;
  closed.tag = 11;
  EXPECT_TRUE(g.Wakes(closed));
  wire::LinkEvent overflow;
  overflow.kind = wire::LinkEvent::Kind::kOverflow;
  overflow.tag = 11;
  EXPECT_TRUE(g.Wakes(overflow));
}

TEST(CompletionGateTest, AnAnswerTheOwnerSettlesItselfCountsForTheJob) {
  CompletionGate g = Gate();
  g.Expect(JobId(4), {RankId(1), RankId(2), RankId(3)});
  EXPECT_FALSE(g.Wakes(Done(12, 4, 2)));
  EXPECT_FALSE(g.Settle(JobId(4), RankId(3)));  // rank 1 still awaited
  EXPECT_TRUE(g.Wakes(Done(11, 4, 1)));
  // Settling the last awaited answer tells the owner to look at its inbox.
  g.Expect(JobId(6), {RankId(1), RankId(2)});
  EXPECT_FALSE(g.Wakes(Done(11, 6, 1)));
  EXPECT_TRUE(g.Settle(JobId(6), RankId(2)));
  EXPECT_EQ(g.jobs(), 0u);
}

TEST(CompletionGateTest, AJobForRankZeroAloneAwaitsNoPeer) {
  CompletionGate g = Gate();
  g.Expect(JobId(8), {RankId(0)});
  EXPECT_EQ(g.jobs(), 0u);
  EXPECT_TRUE(g.Wakes(Done(11, 8, 1)));
}

TEST(CompletionGateTest, AfterClearEveryAnswerWakes) {
  CompletionGate g = Gate();
  g.Expect(JobId(3), {RankId(1), RankId(2)});
  g.Clear();
  EXPECT_TRUE(g.Wakes(Done(11, 3, 1)));
}

}  // namespace
}  // namespace strata
