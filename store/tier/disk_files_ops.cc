// DiskFiles operations: each store, fetch, spill, read, truncate or unlink
// is a DiskOperation of transport jobs, submitted as the transport has room
// (kBusy keeps a job queued) and finished once its submitted jobs report.
#include "store/tier/disk_files.h"

#include <spdlog/spdlog.h>

#include "store/base/deliberate_leak.h"
#include "store/tier/space_limit.h"

namespace strata {

void DiskFiles::Start(DiskOperation op) {
  const uint64_t id = next_op_++;
  for (RecordJob& j : op.unsubmitted) j.id = JobId(next_job_++);
  if (options_.latencies) op.started = clock().steady();
  op.limit_epoch = limit_epoch_;
  ops_.emplace(id, std::move(op));
  Pump();
}

Status DiskFiles::StartNow(DiskOperation op, RecordJob job) {
  job.id = JobId(next_job_++);
  const JobId job_id = job.id;
  const PrefixKey key = job.key;
  STRATA_RETURN_IF_ERROR(transport_->Submit(std::move(job)));
  if (options_.latencies) op.started = clock().steady();
  op.limit_epoch = limit_epoch_;
  op.outstanding = 1;
  const uint64_t id = next_op_++;
  job_op_[job_id] = {.op = id, .key = key};
  ops_.emplace(id, std::move(op));
  return Status::Ok();
}

void DiskFiles::Pump() {
  // Finishing an operation may start others (truncates, unlinks), which
  // pump again: run those passes here, never nested inside this one.
  if (pumping_) {
    repump_ = true;
    return;
  }
  pumping_ = true;
  do {
    repump_ = false;
    PumpOnce();
  } while (repump_);
  pumping_ = false;
}

void DiskFiles::PumpOnce() {
  done_.clear();
  transport_->Poll(done_);
  for (const RecordJobDone& d : done_) {
    auto j = job_op_.find(d.id);
    if (j == job_op_.end()) continue;
    DiskOperation& op = ops_.at(j->second.op);
    const PrefixKey key = j->second.key;
    job_op_.erase(j);
    --op.outstanding;
    op.bytes += d.bytes;
    if (!d.status.ok() && op.status.ok()) {
      op.status = d.status;
      op.failed_key = key;
      op.unsubmitted.clear();
      if (d.fs_full) ++stats_.fs_full_retries;
    }
  }
  for (auto it = ops_.begin(); it != ops_.end();) {
    DiskOperation& op = it->second;
    while (!op.unsubmitted.empty()) {
      const RecordJob& job = op.unsubmitted.front();
      const JobId id = job.id;
      const PrefixKey key = job.key;
      auto shares = op.host_by_key.find(key);
      Status s = shares != op.host_by_key.end() ? transport_->SubmitShares(job, shares->second)
                 : op.host                      ? transport_->SubmitHost(job, *op.host)
                                                : transport_->Submit(job);
      if (s.code() == StatusCode::kBusy) break;
      op.unsubmitted.pop_front();
      if (!s.ok()) {
        if (op.status.ok()) {
          op.status = s;
          op.failed_key = key;
        }
        op.unsubmitted.clear();
        break;
      }
      ++op.outstanding;
      job_op_[id] = {.op = it->first, .key = key};
    }
    if (op.outstanding == 0 && op.unsubmitted.empty()) {
      DiskOperation done = std::move(op);
      it = ops_.erase(it);
      Finish(done);
    } else {
      ++it;
    }
  }
}

void DiskFiles::Finish(DiskOperation& op) {
  RecordLatency(op);
  if (op.owner != nullptr) {
    op.owner->FinishOperation(op);
  } else if (op.kind == DiskOperation::Kind::kHandover) {
    FinishHandover(op);
  } else {
    FinishCleanup(op);
  }
}

void DiskFiles::FinishCleanup(const DiskOperation& op) {
  STRATA_ASSERT(
      op.kind == DiskOperation::Kind::kTruncate || op.kind == DiskOperation::Kind::kUnlink,
      "an operation with no owner is a truncate or an unlink");
  if (auto n = orphaned_names_.find(op.key);
      n != orphaned_names_.end() && n->second == op.file_id) {
    orphaned_names_.erase(n);
  }
  releasing_bytes_ -= op.release_bytes;
  if (op.status.ok()) {
    used_bytes_ -= op.release_bytes;
  } else {
    ++cleanup_failures_;  // the bytes stay charged: the file may still be there
    ++stats_.disk.dropped_io_total;
  }
}

void DiskFiles::LowerLimitAfterFull(const DiskOperation& op) {
  if (op.limit_epoch != limit_epoch_) return;  // in flight when the limit was last lowered
  // At ENOSPC the filesystem holds what is charged now (committed files,
  // writes in flight, files still being deleted) and what it says is free:
  // plenty free means the failure was elsewhere (a peer's disk, a quota)
  // and the limit stays.
  uint64_t free = 0;
  if (options_.free_bytes) {
    Result<uint64_t> probed = options_.free_bytes();
    if (probed.ok()) free = *probed;
  }
  const uint64_t lowered = LimitForFilesystem(limit_bytes_, used_bytes_ + free);
  if (lowered >= limit_bytes_) return;
  const uint64_t before = limit_bytes_;
  limit_bytes_ = lowered;
  lowered_at_ms_ = now_ms_;
  ++limit_epoch_;
  ++stats_.disk_limit_lowered_total;
  const auto level = limit_epoch_ == 1 ? spdlog::level::warn : spdlog::level::info;
  spdlog::log(level,
              "disk tier: a write failed for want of space ({}); the effective disk limit is "
              "lowered from {} to {} bytes (configured {}), and least-recently-used records "
              "are evicted to make headroom",
              op.status.ToString(), before, lowered, options_.disk_limit_bytes);
  (void)MakeRoom(0);
}

bool DiskFiles::FinishOrphanedWrite(const DiskOperation& op) {
  auto it = orphaned_writes_.find(op.file_id);
  if (it == orphaned_writes_.end()) return false;
  File f = it->second;
  orphaned_writes_.erase(it);
  if (op.status.ok()) {
    // The record was dropped while its file was written: delete what
    // committed; the name stays taken until that unlink completes.
    f.writing = false;
    f.written = true;
    files_[op.file_id] = f;
    Unlink(op.key, op.file_id);
  } else {
    used_bytes_ -= f.bytes;  // the writer removed its temporary file
    orphaned_names_.erase(op.key);
  }
  return true;
}

WriteEnd DiskFiles::FinishWrite(DiskOperation& op) {
  if (FinishOrphanedWrite(op)) return WriteEnd::kOrphaned;
  File& f = files_.at(op.file_id);
  f.writing = false;
  if (!op.status.ok()) {
    used_bytes_ -= f.bytes;  // the writer removed its temporary file
    f.bytes = 0;
    if (op.status.code() == StatusCode::kFsFull) LowerLimitAfterFull(op);
    return WriteEnd::kFailed;
  }
  f.written = true;
  const bool packed = f.replicated_pages || f.replicated_row;
  Result<std::optional<RowDrop>> committed = index_.SetState(op.key, TransferState::kReady);
  if (committed.ok()) Truncate(*committed);
  Unpin(op.pinned);
  ++stats_.disk.stored_total;
  ++(packed ? stats_.disk.packed_total : stats_.disk.per_rank_total);
  stats_.disk.bytes_in_total += op.bytes;
  return WriteEnd::kCommitted;
}

void DiskFiles::RecordLatency(const DiskOperation& op) {
  if (!options_.latencies) return;
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(clock().steady() - op.started);
  DiskJobLatencies& l = *options_.latencies;
  LatencyHistogram* h = &l.store;
  switch (op.kind) {
    case DiskOperation::Kind::kStore:
    case DiskOperation::Kind::kSpill:
    case DiskOperation::Kind::kImport: h = &l.store; break;
    case DiskOperation::Kind::kFetch:
    case DiskOperation::Kind::kReadInto:
    case DiskOperation::Kind::kHandover: h = &l.fetch; break;
    case DiskOperation::Kind::kTruncate: h = &l.truncate; break;
    case DiskOperation::Kind::kUnlink: h = &l.unlink; break;
  }
  h->Record(static_cast<uint64_t>(us.count()));
}

void DiskFiles::Poll(uint64_t now_ms) {
  now_ms_ = std::max(now_ms_, now_ms);
  Pump();
  if (options_.max_age_ms > 0 && accepting()) {
    // Parked records (a composite's, in host memory only) expire too.
    ExpirySweep sweep = index_.Expire(now_ms_, options_.max_age_ms, [](const IndexEntry& e) {
      return e.state == TransferState::kReady || e.state == TransferState::kParked;
    });
    stats_.disk.expired_total += sweep.expired_leaves;
    ApplyRemoved(sweep.removed);
  }
  Demote();
}

bool DiskFiles::WaitIdle(std::chrono::milliseconds bound) {
  const auto until = clock().steady() + bound;
  Pump();
  while (!ops_.empty() && transport_->stopped().ok() && clock().steady() < until) {
    (void)transport_->WaitForCompletion(std::chrono::milliseconds(10));
    Pump();
  }
  return ops_.empty();
}

void DiskFiles::WaitForCompletion(std::chrono::milliseconds bound) {
  (void)transport_->WaitForCompletion(bound);
  Pump();
}

Status DiskFiles::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto until = clock().steady() + options_.close_deadline;
  while (!ops_.empty() && transport_->stopped().ok() && clock().steady() < until) {
    (void)transport_->WaitForCompletion(std::chrono::milliseconds(20));
    Pump();
  }
  Status s = transport_->Close(clock().LeftUntil(until));
  if (!s.ok()) {
    LeakOnPurpose(std::move(transport_));  // copies may still run: keep everything alive
    return s;
  }
  if (!ops_.empty()) {
    return Status::Aborted(std::to_string(ops_.size()) + " disk jobs did not drain");
  }
  return Status::Ok();
}

}  // namespace strata
