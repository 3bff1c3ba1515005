#include "store/transfer/transfer_tracker.h"

namespace strata {

Status TransferTracker::Start(uint64_t op, std::vector<TransferJob> jobs) {
  STRATA_ASSERT(ops_.count(op) == 0, "operation id already active");
  Operation o;
  for (TransferJob& j : jobs) {
    j.id = JobId(next_job_++);
    o.queued.push_back(std::move(j));
  }
  if (!o.queued.empty()) {
    JobId first = o.queued.front().id;
    STRATA_RETURN_IF_ERROR(transfers_.Submit(o.queued.front()));
    o.queued.pop_front();
    o.outstanding = 1;
    job_op_[first] = op;
  }
  ops_.emplace(op, std::move(o));
  return Status::Ok();
}

void TransferTracker::Pump(std::vector<FinishedOperation>& finished) {
  completions_.clear();
  transfers_.Poll(completions_);
  for (TransferCompletion& c : completions_) {
    auto j = job_op_.find(c.id);
    STRATA_ASSERT(j != job_op_.end(), "completion of a job no operation owns");
    Operation& o = ops_.at(j->second);
    job_op_.erase(j);
    --o.outstanding;
    o.bytes += c.bytes;
    if (!c.status.ok() && o.status.ok()) {
      o.status = c.status;
      o.queued.clear();
    }
  }
  for (auto it = ops_.begin(); it != ops_.end();) {
    Operation& o = it->second;
    while (!o.queued.empty()) {
      JobId id = o.queued.front().id;
      Status s = transfers_.Submit(o.queued.front());
      if (s.code() == StatusCode::kBusy) break;
      if (!s.ok()) {
        o.status = s;
        o.queued.clear();
        break;
      }
      o.queued.pop_front();
      ++o.outstanding;
      job_op_[id] = it->first;
    }
    if (o.outstanding == 0 && o.queued.empty()) {
      finished.push_back({it->first, o.status, o.bytes});
      it = ops_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace strata
