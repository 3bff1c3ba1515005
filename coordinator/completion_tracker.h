// All-ranks completion of record jobs (seed 2.14), as pure logic: a job
// completes only once every rank it was sent to reported; the first failure
// wins; filesystem-full survives aggregation; a store that failed on some
// ranks names the ranks that wrote, so their files are unlinked before the
// failure is reported. No threads, sockets or clock reads: deadlines are
// passed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "store/base/ids.h"
#include "store/base/status.h"
#include "store/tier/disk_transport.h"

namespace strata {

using CompletionClock = std::chrono::steady_clock;

// One rank's outcome of one job.
struct RankOutcome {
  RankId rank;
  Status status;
  bool fs_full = false;
  uint64_t bytes = 0;
};

struct JobCompletion {
  JobId id;
  RecordJobKind kind = RecordJobKind::kStore;
  // OK, or the first failure reported, its message prefixed "rank N: ".
  Status status;
  bool fs_full = false;  // some rank ran out of space
  uint64_t bytes = 0;    // every rank's bytes
  // A store that failed: the ranks whose store succeeded, ascending (their
  // files must go before the failure is reported). Empty otherwise.
  std::vector<RankId> wrote;
};

struct OverdueJob {
  JobId id;
  RecordJobKind kind = RecordJobKind::kStore;
  std::vector<RankId> missing;  // ranks that have not reported, ascending
};

class CompletionTracker {
 public:
  explicit CompletionTracker(uint32_t world_size)
      : world_size_(world_size), waiting_(world_size, 0) {}

  // Waits for each of `ranks` to finish job `id` by `deadline`. Errors
  // (kInvalidArgument): `id` already tracked, no ranks, or a rank out of
  // range or listed twice.
  Status Begin(JobId id, RecordJobKind kind, const std::vector<RankId>& ranks,
               CompletionClock::time_point deadline);

  // Records `outcome` for job `id`; returns the completion once every rank
  // reported (the job is then forgotten). Errors (kFailedPrecondition, a
  // protocol error by that rank, nothing recorded): an unknown job, a rank
  // the job was not sent to, or a second report from one rank.
  Result<std::optional<JobCompletion>> Report(JobId id, RankOutcome outcome);

  // Jobs whose deadline is at or before `now` with ranks still missing.
  std::vector<OverdueJob> Overdue(CompletionClock::time_point now) const;
  // True when some job waits for `rank`.
  bool WaitsOn(RankId rank) const;
  // Jobs waiting for some rank.
  size_t outstanding() const { return jobs_.size(); }

 private:
  struct Pending {
    RecordJobKind kind = RecordJobKind::kStore;
    CompletionClock::time_point deadline;
    std::map<RankId, std::optional<RankOutcome>> ranks;  // reported or not
    size_t reported = 0;
    Status first_error;
    bool fs_full = false;
    uint64_t bytes = 0;
  };

  uint32_t world_size_;
  std::map<JobId, Pending> jobs_;  // ordered: Overdue reports older ids first
  std::vector<uint64_t> waiting_;  // by rank: jobs that rank has not reported
};

}  // namespace strata
