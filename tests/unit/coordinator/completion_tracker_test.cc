#include "coordinator/completion_tracker.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

using namespace std::chrono_literals;

const CompletionClock::time_point kT0{};

std::vector<RankId> Ranks(std::initializer_list<uint32_t> ranks) {
  std::vector<RankId> out;
  for (uint32_t r : ranks) out.emplace_back(r);
  return out;
}

RankOutcome Ok(uint32_t rank, uint64_t bytes = 100) {
  return {RankId(rank), Status::Ok(), false, bytes};
}
RankOutcome Failed(uint32_t rank, Status status, bool fs_full = false) {
  return {RankId(rank), std::move(status), fs_full, 0};
}

// One step of a table: a rank's outcome and what Report must answer.
struct Step {
  RankOutcome outcome;
  bool completes = false;
};

struct Case {
  std::string name;
  RecordJobKind kind;
  std::vector<Step> steps;
  StatusCode code;      // of the completion
  std::string message;  // of the completion, when not OK
  bool fs_full;
  std::vector<RankId> wrote;
};

TEST(CompletionTrackerTest, EveryRule) {
  const std::vector<Case> cases = {
      {"completes only when every rank reported",
       RecordJobKind::kFetch,
       {{Ok(0)}, {Ok(2)}, {Ok(1), true}},
       StatusCode::kOk,
       "",
       false,
       {}},
      {"the first failure wins",
       RecordJobKind::kFetch,
       {{Failed(2, Status::IoError("read failed"))},
        {Failed(1, Status::Corruption("bad page"))},
        {Ok(0), true}},
       StatusCode::kIoError,
       "rank 2: read failed",
       false,
       {}},
      {"filesystem-full survives a later, different failure",
       RecordJobKind::kStore,
       {{Failed(1, Status::FsFull("no space"), true)},
        {Failed(2, Status::IoError("disk gone"))},
        {Ok(0), true}},
       StatusCode::kFsFull,
       "rank 1: no space",
       true,
       Ranks({0})},
      {"filesystem-full survives behind an earlier failure",
       RecordJobKind::kFetch,
       {{Failed(2, Status::IoError("disk gone"))},
        {Failed(1, Status::FsFull("no space"), true)},
        {Ok(0), true}},
       StatusCode::kIoError,
       "rank 2: disk gone",
       true,
       {}},
      {"a store that failed on one rank names the ranks that wrote",
       RecordJobKind::kStore,
       {{Ok(3)}, {Failed(1, Status::IoError("write failed"))}, {Ok(0)}, {Ok(2), true}},
       StatusCode::kIoError,
       "rank 1: write failed",
       false,
       Ranks({0, 2, 3})},
      {"a store that failed everywhere names nobody",
       RecordJobKind::kStore,
       {{Failed(0, Status::Busy("full"))}, {Failed(1, Status::Busy("full")), true}},
       StatusCode::kBusy,
       "rank 0: full",
       false,
       {}},
      {"a failed unlink names nobody to clean up",
       RecordJobKind::kUnlink,
       {{Ok(0)}, {Failed(1, Status::IoError("unlink failed")), true}},
       StatusCode::kIoError,
       "rank 1: unlink failed",
       false,
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CompletionTracker tracker(4);
    std::vector<RankId> ranks;
    for (const Step& s : c.steps) ranks.push_back(s.outcome.rank);
    ASSERT_TRUE(tracker.Begin(JobId(7), c.kind, ranks, kT0 + 1s).ok());
    std::optional<JobCompletion> done;
    for (const Step& s : c.steps) {
      EXPECT_TRUE(tracker.WaitsOn(s.outcome.rank));
      Result<std::optional<JobCompletion>> r = tracker.Report(JobId(7), s.outcome);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->has_value(), s.completes);
      if (r->has_value()) done = std::move(**r);
    }
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->id, JobId(7));
    EXPECT_EQ(done->kind, c.kind);
    EXPECT_EQ(done->status.code(), c.code);
    EXPECT_EQ(done->status.message(), c.message);
    EXPECT_EQ(done->fs_full, c.fs_full);
    EXPECT_EQ(done->wrote, c.wrote);
    EXPECT_EQ(tracker.outstanding(), 0u);
    for (uint32_t r = 0; r < 4; ++r) EXPECT_FALSE(tracker.WaitsOn(RankId(r)));
  }
}

TEST(CompletionTrackerTest, BytesAreSummedOverRanks) {
  CompletionTracker tracker(3);
  ASSERT_TRUE(tracker.Begin(JobId(1), RecordJobKind::kStore, Ranks({0, 1, 2}), kT0).ok());
  ASSERT_TRUE(tracker.Report(JobId(1), Ok(0, 10)).ok());
  ASSERT_TRUE(tracker.Report(JobId(1), Ok(1, 20)).ok());
  Result<std::optional<JobCompletion>> r = tracker.Report(JobId(1), Ok(2, 30));
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->bytes, 60u);
}

TEST(CompletionTrackerTest, ProtocolErrorsAreRefusedAndChangeNothing) {
  CompletionTracker tracker(4);
  ASSERT_TRUE(tracker.Begin(JobId(5), RecordJobKind::kUnlink, Ranks({0, 1}), kT0).ok());
  const std::vector<std::pair<std::pair<JobId, RankOutcome>, std::string>> bad = {
      {{JobId(6), Ok(1)}, "rank 1 reported job 6, which is not outstanding"},
      {{JobId(5), Ok(3)}, "rank 3 reported job 5, which was not sent to it"},
  };
  for (const auto& [report, message] : bad) {
    Result<std::optional<JobCompletion>> r = tracker.Report(report.first, report.second);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(r.status().message(), message);
  }
  ASSERT_TRUE(tracker.Report(JobId(5), Ok(1)).ok());
  Result<std::optional<JobCompletion>> twice = tracker.Report(JobId(5), Ok(1));
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(), "rank 1 reported job 5 twice");
  EXPECT_EQ(tracker.outstanding(), 1u);
  EXPECT_TRUE(tracker.WaitsOn(RankId(0)));
  EXPECT_FALSE(tracker.WaitsOn(RankId(1)));
  Result<std::optional<JobCompletion>> last = tracker.Report(JobId(5), Ok(0));
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_TRUE((*last)->status.ok());
  // Once complete, the job is unknown: a late report is a protocol error.
  EXPECT_FALSE(tracker.Report(JobId(5), Ok(0)).ok());
}

TEST(CompletionTrackerTest, BeginRefusesMalformedJobs) {
  CompletionTracker tracker(2);
  EXPECT_EQ(tracker.Begin(JobId(1), RecordJobKind::kStore, {}, kT0).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(tracker.Begin(JobId(1), RecordJobKind::kStore, Ranks({0, 2}), kT0).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(tracker.Begin(JobId(1), RecordJobKind::kStore, Ranks({1, 1}), kT0).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(tracker.Begin(JobId(1), RecordJobKind::kStore, Ranks({0, 1}), kT0).ok());
  EXPECT_EQ(tracker.Begin(JobId(1), RecordJobKind::kFetch, Ranks({0}), kT0).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(tracker.outstanding(), 1u);
}

TEST(CompletionTrackerTest, OverdueJobsNameTheRanksStillMissing) {
  CompletionTracker tracker(3);
  ASSERT_TRUE(tracker.Begin(JobId(1), RecordJobKind::kStore, Ranks({0, 1, 2}), kT0 + 10s).ok());
  ASSERT_TRUE(tracker.Begin(JobId(2), RecordJobKind::kFetch, Ranks({0, 1, 2}), kT0 + 20s).ok());
  ASSERT_TRUE(tracker.Report(JobId(1), Ok(1)).ok());
  EXPECT_TRUE(tracker.Overdue(kT0 + 9s).empty());
  std::vector<OverdueJob> overdue = tracker.Overdue(kT0 + 10s);
  ASSERT_EQ(overdue.size(), 1u);
  EXPECT_EQ(overdue[0].id, JobId(1));
  EXPECT_EQ(overdue[0].kind, RecordJobKind::kStore);
  EXPECT_EQ(overdue[0].missing, Ranks({0, 2}));
  EXPECT_EQ(tracker.Overdue(kT0 + 1h).size(), 2u);
  // A job every rank finished is never overdue.
  ASSERT_TRUE(tracker.Report(JobId(1), Ok(0)).ok());
  ASSERT_TRUE(tracker.Report(JobId(1), Ok(2)).ok());
  EXPECT_EQ(tracker.Overdue(kT0 + 1h).size(), 1u);
}

}  // namespace
}  // namespace strata
