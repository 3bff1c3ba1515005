// ServingRules driven by hand: a scripted runner stands in for the staged
// transport, and each rule has a table.
#include "rank_agent/serving_rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata {
namespace {

constexpr RankId kRank{3};

// Answers every Submit with `next`; records the jobs it accepted.
class ScriptedRunner final : public JobRunner {
 public:
  Status Submit(const RecordJob& job) override {
    if (next.ok()) accepted.push_back(job.id);
    return next;
  }
  Status next = Status::Ok();
  std::vector<JobId> accepted;
};

RecordJob JobNumbered(uint64_t id) {
  RecordJob job;
  job.id = JobId(id);
  return job;
}

wire::Message JobMessage(uint64_t id) { return wire::Job{JobNumbered(id)}; }

// Jobs first..last arrive while the runner is full: all held.
void HoldJobs(ServingRules& rules, ScriptedRunner& runner, uint64_t first, uint64_t last) {
  JobAnswers answers;
  runner.next = Status::Busy("full");
  for (uint64_t id = first; id <= last; ++id) {
    ASSERT_EQ(rules.OnJob(JobNumbered(id), runner, answers), JobAdmission::kHeld);
  }
  ASSERT_TRUE(answers.empty());
}

// ---- job admission -----------------------------------------------------------

struct AdmissionRow {
  std::string name;
  bool draining;
  size_t held_before;  // jobs already waiting (the runner said kBusy to them)
  size_t held_max;
  Status runner;  // what the runner answers this job
  JobAdmission expected;
  StatusCode answer;  // the answer's code; kOk: no answer yet
  size_t held_after;
  size_t active_after;
};

TEST(ServingRulesTest, WhatBecomesOfAJobThatArrives) {
  const std::vector<AdmissionRow> rows = {
      {"room in the runner", false, 0, 4, Status::Ok(), JobAdmission::kSubmitted, StatusCode::kOk,
       0, 1},
      {"runner full, nothing held", false, 0, 4, Status::Busy("full"), JobAdmission::kHeld,
       StatusCode::kOk, 1, 0},
      {"runner full, a hold of 0 still holds the first", false, 0, 0, Status::Busy("full"),
       JobAdmission::kHeld, StatusCode::kOk, 1, 0},
      {"jobs held: joins them even if the runner has room", false, 2, 4, Status::Ok(),
       JobAdmission::kHeld, StatusCode::kOk, 3, 0},
      {"hold full", false, 4, 4, Status::Ok(), JobAdmission::kRefusedBusy, StatusCode::kBusy, 4, 0},
      {"runner fails it", false, 0, 4, Status::IoError("bad plane"), JobAdmission::kFailed,
       StatusCode::kIoError, 0, 0},
      {"draining", true, 0, 4, Status::Ok(), JobAdmission::kRefusedDraining, StatusCode::kAborted,
       0, 0},
  };
  for (const AdmissionRow& row : rows) {
    SCOPED_TRACE(row.name);
    ServingRules rules(kRank, row.held_max);
    ScriptedRunner runner;
    JobAnswers answers;
    if (row.held_before > 0) HoldJobs(rules, runner, 100, 100 + row.held_before - 1);
    if (row.draining) {
      ASSERT_FALSE(rules.OnMessage(wire::Drain{}, runner, answers).has_value());
    }
    runner.next = row.runner;
    EXPECT_EQ(rules.OnJob(JobNumbered(1), runner, answers), row.expected)
        << JobAdmissionName(row.expected);
    if (row.answer == StatusCode::kOk) {
      EXPECT_TRUE(answers.empty());
    } else {
      ASSERT_EQ(answers.size(), 1u);
      EXPECT_EQ(answers[0].id, JobId(1));
      EXPECT_EQ(answers[0].rank, kRank);
      EXPECT_EQ(answers[0].status.code(), row.answer) << answers[0].status.ToString();
    }
    EXPECT_EQ(rules.held().size(), row.held_after);
    EXPECT_EQ(rules.active_count(), row.active_after);
  }
}

TEST(ServingRulesTest, HeldJobsGoToTheRunnerOldestFirstUntilItIsBusy) {
  ServingRules rules(kRank, 8);
  ScriptedRunner runner;
  JobAnswers answers;
  HoldJobs(rules, runner, 1, 4);
  runner.next = Status::Ok();
  rules.SubmitHeld(runner, answers);
  EXPECT_EQ(runner.accepted, (std::vector<JobId>{JobId(1), JobId(2), JobId(3), JobId(4)}));
  EXPECT_TRUE(rules.held().empty());
  EXPECT_EQ(rules.active_count(), 4u);
  EXPECT_TRUE(answers.empty());
}

TEST(ServingRulesTest, AHeldJobTheRunnerFailsIsAnsweredAndTheRestWait) {
  ServingRules rules(kRank, 8);
  ScriptedRunner runner;
  JobAnswers answers;
  HoldJobs(rules, runner, 1, 3);
  runner.next = Status::IoError("bad plane");
  rules.SubmitHeld(runner, answers);
  // Every held job met the same error, in order.
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0].id, JobId(1));
  EXPECT_EQ(answers[2].id, JobId(3));
  EXPECT_EQ(answers[0].status.code(), StatusCode::kIoError);
  EXPECT_TRUE(rules.held().empty());
  EXPECT_EQ(rules.active_count(), 0u);
}

TEST(ServingRulesTest, AJobWhoseIdIsHeldOrActiveEndsTheSession) {
  for (const bool held : {false, true}) {
    ServingRules rules(kRank, 8);
    ScriptedRunner runner;
    JobAnswers answers;
    if (held) {
      HoldJobs(rules, runner, 3, 4);
    } else {
      ASSERT_EQ(rules.OnJob(JobNumbered(4), runner, answers), JobAdmission::kSubmitted);
    }
    runner.next = Status::Ok();
    const size_t accepted = runner.accepted.size();
    std::optional<Status> ended = rules.OnMessage(JobMessage(4), runner, answers);
    ASSERT_TRUE(ended.has_value()) << (held ? "held" : "active");
    EXPECT_EQ(ended->code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(ended->message().find("job 4 while rank 3 still held or ran it"), std::string::npos)
        << ended->message();
    EXPECT_TRUE(answers.empty()) << "the running job's id was answered";
    EXPECT_EQ(runner.accepted.size(), accepted) << "the duplicate reached the runner";
    EXPECT_TRUE(rules.ended());
  }
}

// ---- answers -----------------------------------------------------------------

TEST(ServingRulesTest, AJobIsAnsweredOnceWhenItFinishedNeverBefore) {
  ServingRules rules(kRank, 8);
  ScriptedRunner runner;
  JobAnswers answers;
  ASSERT_EQ(rules.OnJob(JobNumbered(7), runner, answers), JobAdmission::kSubmitted);
  EXPECT_TRUE(answers.empty()) << "answered before the runner finished it";
  rules.OnFinished({JobId(7), Status::Ok(), false, 4096}, answers);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].status.ok());
  EXPECT_EQ(answers[0].bytes, 4096u);
  rules.OnFinished({JobId(7), Status::Ok(), false, 4096}, answers);
  rules.OnFinished({JobId(8), Status::Ok(), false, 0}, answers);
  EXPECT_EQ(answers.size(), 1u) << "a second or unknown completion was answered";
}

struct AnswerRow {
  std::string name;
  Status status;
  bool fs_full;
  bool expected_full;
};

TEST(ServingRulesTest, TheFilesystemFullFlagTravelsOnlyWithAFailure) {
  const std::vector<AnswerRow> rows = {
      {"ok", Status::Ok(), false, false},
      {"ok with a stale flag", Status::Ok(), true, false},
      {"full", Status::FsFull("no space"), true, true},
      {"other failure", Status::IoError("EIO"), false, false},
  };
  ServingRules rules(kRank, 8);
  for (const AnswerRow& row : rows) {
    SCOPED_TRACE(row.name);
    const wire::JobDone answer = rules.AnswerFor({JobId(5), row.status, row.fs_full, 10});
    EXPECT_EQ(answer.rank, kRank);
    EXPECT_EQ(answer.status.code(), row.status.code());
    EXPECT_EQ(answer.filesystem_full, row.expected_full);
  }
}

TEST(ServingRulesTest, AnAnswerFitsOnTheWire) {
  ServingRules rules(kRank, 8);
  const wire::JobDone answer = rules.AnswerFor(
      {JobId(5), Status::IoError(std::string(wire::kTextBytesMax * 2, 'x')), false, 0});
  EXPECT_LE(answer.status.message().size(), wire::kTextBytesMax);
}

// ---- drain ---------------------------------------------------------------------

struct DrainRow {
  std::string name;
  bool drain;
  bool held;
  bool active;
  bool due;
};

TEST(ServingRulesTest, DrainIsCompleteOnceNothingIsHeldOrActive) {
  const std::vector<DrainRow> rows = {
      {"no Drain yet", false, false, false, false},
      {"Drain, idle", true, false, false, true},
      {"Drain, a job held", true, true, false, false},
      {"Drain, a job active", true, false, true, false},
  };
  for (const DrainRow& row : rows) {
    SCOPED_TRACE(row.name);
    ServingRules rules(kRank, 8);
    ScriptedRunner runner;
    JobAnswers answers;
    if (row.active) (void)rules.OnJob(JobNumbered(1), runner, answers);
    runner.next = Status::Busy("full");
    if (row.held) (void)rules.OnJob(JobNumbered(2), runner, answers);
    if (row.drain) (void)rules.OnMessage(wire::Drain{}, runner, answers);
    EXPECT_EQ(rules.DrainDue(), row.due);
  }
}

TEST(ServingRulesTest, DrainedIsDueOnceAfterTheLastJobFinished) {
  ServingRules rules(kRank, 8);
  ScriptedRunner runner;
  JobAnswers answers;
  (void)rules.OnJob(JobNumbered(1), runner, answers);
  (void)rules.OnMessage(wire::Drain{}, runner, answers);
  EXPECT_TRUE(rules.draining());
  EXPECT_FALSE(rules.DrainDue());
  rules.OnFinished({JobId(1), Status::Ok(), false, 0}, answers);
  ASSERT_TRUE(rules.DrainDue());
  rules.MarkDrained();
  EXPECT_FALSE(rules.DrainDue());
}

// ---- how a session ends --------------------------------------------------------

struct EndRow {
  std::string name;
  bool drained;
  wire::Message message;
  bool ends;
  StatusCode code;  // when it ends
};

TEST(ServingRulesTest, WhatEachMessageDoesToTheSession) {
  const std::vector<EndRow> rows = {
      {"heartbeat", false, wire::Heartbeat{}, false, StatusCode::kOk},
      {"job", false, JobMessage(1), false, StatusCode::kOk},
      {"drain", false, wire::Drain{}, false, StatusCode::kOk},
      {"close after drained", true, wire::Close{"bye"}, true, StatusCode::kOk},
      {"close before drained", false, wire::Close{"bye"}, true, StatusCode::kUnavailable},
      {"a message only peers send", false, wire::Drained{}, true, StatusCode::kFailedPrecondition},
      {"hello", false, wire::Hello{}, true, StatusCode::kFailedPrecondition},
  };
  for (const EndRow& row : rows) {
    SCOPED_TRACE(row.name);
    ServingRules rules(kRank, 8);
    ScriptedRunner runner;
    JobAnswers answers;
    if (row.drained) {
      (void)rules.OnMessage(wire::Drain{}, runner, answers);
      rules.MarkDrained();
    }
    const std::optional<Status> ended = rules.OnMessage(row.message, runner, answers);
    EXPECT_EQ(ended.has_value(), row.ends);
    EXPECT_EQ(rules.ended(), row.ends);
    if (ended) {
      EXPECT_EQ(ended->code(), row.code) << ended->ToString();
    }
  }
}

TEST(ServingRulesTest, ALostLinkEndsCleanlyOnlyAfterDrained) {
  ServingRules clean(kRank, 8);
  clean.MarkDrained();
  EXPECT_TRUE(clean.OnLinkClosed("reset").ok());
  ServingRules lost(kRank, 8);
  const Status ended = lost.OnLinkClosed("reset: connection lost");
  EXPECT_EQ(ended.code(), StatusCode::kUnavailable);
  EXPECT_NE(ended.message().find("connection lost"), std::string::npos) << ended.message();
  ServingRules flooded(kRank, 8);
  EXPECT_EQ(flooded.OnOverflow().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(flooded.ended());
}

TEST(ServingRulesTest, AnEndedSessionDropsHeldJobsAndAnswersNothing) {
  ServingRules rules(kRank, 8);
  ScriptedRunner runner;
  JobAnswers answers;
  (void)rules.OnJob(JobNumbered(1), runner, answers);
  runner.next = Status::Busy("full");
  (void)rules.OnJob(JobNumbered(2), runner, answers);
  ASSERT_EQ(rules.held().size(), 1u);
  (void)rules.OnLinkClosed("reset");
  EXPECT_TRUE(rules.held().empty());
  runner.next = Status::Ok();
  rules.SubmitHeld(runner, answers);
  rules.OnFinished({JobId(1), Status::Ok(), false, 0}, answers);
  EXPECT_TRUE(answers.empty());
  EXPECT_EQ(runner.accepted, std::vector<JobId>{JobId(1)});
  EXPECT_EQ(rules.active_count(), 0u);
  EXPECT_FALSE(rules.DrainDue());
  EXPECT_EQ(rules.OnMessage(wire::Heartbeat{}, runner, answers)->code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace strata
