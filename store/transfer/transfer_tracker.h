// TransferTracker: runs multi-job operations (a record's copy-out, a chain's
// restore) over a Transfers, one caller-chosen operation id per operation.
// The first job is submitted at Start; the rest as the transfer queues make
// room, on Pump. After a failed job no further job of that operation is
// submitted, and the operation finishes only once its submitted jobs drained.
//
// Thread: the store's thread. Never blocks.
#pragma once

#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "store/transfer/transfers.h"

namespace strata {

struct FinishedOperation {
  uint64_t op = 0;
  Status status;       // the first failure, or OK
  uint64_t bytes = 0;  // bytes moved by its completed jobs
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
  };
  Transfers& transfers_;
  std::map<uint64_t, Operation> ops_;  // ordered: older operations submit first
  std::unordered_map<JobId, uint64_t> job_op_;
  uint64_t next_job_ = 1;
  std::vector<TransferCompletion> completions_;
};

}  // namespace strata
