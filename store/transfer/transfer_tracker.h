// TransferTracker: runs multi-job operations (a record's copy-out, a chain's
// restore) over a Transfers, one caller-chosen operation id per operation.
// The first job is submitted at Start; the rest as the transfer queues make
// room, on Pump. After a failed job no further job of that operation is
// submitted, and the operation finishes only once its submitted jobs drained.
//
// Thread: one caller at a time (as SlabPool). Never blocks.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "store/transfer/transfers.h"

namespace strata {

struct FinishedOperation {
  uint64_t op = 0;
  Status status;       // the first failure, or OK
  uint64_t bytes = 0;  // bytes moved by its completed jobs
  // Copy-out with hash_records jobs: the record checksums, set only when every
  // job of the operation came back hashed (TransferCompletion::page_sums):
  // one per page in the order the jobs listed them, and the row's, if any.
  std::vector<uint64_t> page_sums = {};
  std::optional<uint64_t> row_sum = std::nullopt;
};

class TransferTracker {
 public:
  explicit TransferTracker(Transfers& transfers) : transfers_(transfers) {}

  // Assigns job ids and submits the first job. On error (kBusy when the
  // queues are full) nothing was submitted and the operation is forgotten.
  // `op` must not be active. An empty job list finishes at the next Pump.
  Status Start(uint64_t op, std::vector<TransferJob> jobs);
  // Collects completions, submits queued jobs, appends finished operations.
  void Pump(std::vector<FinishedOperation>& finished);
  size_t active() const { return ops_.size(); }
  bool Active(uint64_t op) const { return ops_.count(op) != 0; }

 private:
  struct Operation {
    std::deque<TransferJob> queued;
    uint32_t outstanding = 0;
    Status status;
    uint64_t bytes = 0;
    // Per job, in job order: its sums, once it came back hashed.
    std::vector<std::optional<std::vector<uint64_t>>> job_sums;
    std::optional<uint64_t> row_sum;
  };
  struct JobRef {
    uint64_t op = 0;
    uint32_t index = 0;  // in the operation's job order
    size_t pages = 0;
    bool row = false;
  };
  // Records `c`'s sums in `o` when they cover the whole job.
  static void TakeSums(Operation& o, const JobRef& ref, TransferCompletion& c);
  static FinishedOperation Finished(uint64_t op, Operation& o);
  Transfers& transfers_;
  std::map<uint64_t, Operation> ops_;  // ordered: older operations submit first
  std::unordered_map<JobId, JobRef> job_op_;
  uint64_t next_job_ = 1;
  std::vector<TransferCompletion> completions_;
};

}  // namespace strata
