#include "store/transfer/transfer_tracker.h"

namespace strata {

Status TransferTracker::Start(uint64_t op, std::vector<TransferJob> jobs) {
  STRATA_ASSERT(ops_.count(op) == 0, "operation id already active");
  Operation o;
  o.job_sums.resize(jobs.size());
  for (TransferJob& j : jobs) {
    j.id = JobId(next_job_++);
    o.queued.push_back(std::move(j));
  }
  if (!o.queued.empty()) {
    const TransferJob& first = o.queued.front();
    const JobRef ref{op, 0, first.page_ids.size(), first.row_slot.has_value()};
    const JobId id = first.id;
    STRATA_RETURN_IF_ERROR(transfers_.Submit(first));
    o.queued.pop_front();
    o.outstanding = 1;
    job_op_[id] = ref;
  }
  ops_.emplace(op, std::move(o));
  return Status::Ok();
}

void TransferTracker::TakeSums(Operation& o, const JobRef& ref, TransferCompletion& c) {
  if (!c.status.ok() || c.page_sums.size() != ref.pages || c.row_sum.has_value() != ref.row ||
      (ref.pages == 0 && !ref.row)) {
    return;
  }
  o.job_sums[ref.index] = std::move(c.page_sums);
  if (ref.row) o.row_sum = c.row_sum;
}

FinishedOperation TransferTracker::Finished(uint64_t op, Operation& o) {
  FinishedOperation f{op, o.status, o.bytes, {}, std::nullopt};
  if (!o.status.ok()) return f;
  for (const auto& sums : o.job_sums) {
    if (!sums) return f;  // some job was not hashed: no sums at all
  }
  for (auto& sums : o.job_sums) f.page_sums.insert(f.page_sums.end(), sums->begin(), sums->end());
  f.row_sum = o.row_sum;
  return f;
}

void TransferTracker::Pump(std::vector<FinishedOperation>& finished) {
  completions_.clear();
  transfers_.Poll(completions_);
  for (TransferCompletion& c : completions_) {
    auto j = job_op_.find(c.id);
    STRATA_ASSERT(j != job_op_.end(), "completion of a job no operation owns");
    const JobRef ref = j->second;
    Operation& o = ops_.at(ref.op);
    job_op_.erase(j);
    --o.outstanding;
    o.bytes += c.bytes;
    if (!c.status.ok() && o.status.ok()) {
      o.status = c.status;
      o.queued.clear();
    }
    TakeSums(o, ref, c);
  }
  for (auto it = ops_.begin(); it != ops_.end();) {
    Operation& o = it->second;
    while (!o.queued.empty()) {
      const TransferJob& next = o.queued.front();
      const JobRef ref{it->first, static_cast<uint32_t>(o.job_sums.size() - o.queued.size()),
                       next.page_ids.size(), next.row_slot.has_value()};
      const JobId id = next.id;
      Status s = transfers_.Submit(next);
      if (s.code() == StatusCode::kBusy) break;
      if (!s.ok()) {
        o.status = s;
        o.queued.clear();
        break;
      }
      o.queued.pop_front();
      ++o.outstanding;
      job_op_[id] = ref;
    }
    if (o.outstanding == 0 && o.queued.empty()) {
      finished.push_back(Finished(it->first, o));
      it = ops_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace strata
