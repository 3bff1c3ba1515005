// DiskStore operations: each store, fetch, spill, read, truncate or unlink
// is an Operation of transport jobs, submitted as the transport has room
// (kBusy keeps a job queued) and finished once its submitted jobs report.
#include "store/tier/disk_store.h"

namespace strata {

uint64_t DiskStore::StartOperation(Operation op) {
  const uint64_t id = next_op_++;
  for (RecordJob& j : op.unsubmitted) j.id = JobId(next_job_++);
  if (options_.latencies) op.started = std::chrono::steady_clock::now();
  ops_.emplace(id, std::move(op));
  Pump();
  return id;
}

void DiskStore::Pump() {
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

void DiskStore::PumpOnce() {
  done_.clear();
  transport_->Poll(done_);
  for (const RecordJobDone& d : done_) {
    auto j = job_op_.find(d.id);
    if (j == job_op_.end()) continue;
    Operation& op = ops_.at(j->second);
    job_op_.erase(j);
    --op.outstanding;
    op.bytes += d.bytes;
    if (!d.status.ok() && op.status.ok()) {
      op.status = d.status;
      op.unsubmitted.clear();
      if (d.fs_full) ++stats_.fs_full_retries;
    }
  }
  for (auto it = ops_.begin(); it != ops_.end();) {
    Operation& op = it->second;
    while (!op.unsubmitted.empty()) {
      JobId id = op.unsubmitted.front().id;
      Status s = SubmitJob(op, op.unsubmitted.front());
      if (s.code() == StatusCode::kBusy) break;
      op.unsubmitted.pop_front();
      if (!s.ok()) {
        if (op.status.ok()) op.status = s;
        op.unsubmitted.clear();
        break;
      }
      ++op.outstanding;
      job_op_[id] = it->first;
    }
    if (op.outstanding == 0 && op.unsubmitted.empty()) {
      Operation done = std::move(op);
      const uint64_t id = it->first;
      it = ops_.erase(it);
      FinishOperation(id, done);
    } else {
      ++it;
    }
  }
}

Status DiskStore::SubmitJob(const Operation& op, const RecordJob& job) {
  return op.host ? transport_->SubmitHost(job, *op.host) : transport_->Submit(job);
}

bool DiskStore::FinishOrphanedWrite(const Operation& op) {
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

void DiskStore::FinishStore(Operation& op) {
  if (FinishOrphanedWrite(op)) {
    ++stats_.store_failed;
    events_.push_back({StoreEvent::Kind::kStoreFailed,
                       op.checkpoint_id,
                       {},
                       op.key,
                       Status::Aborted("record removed while its file was written"),
                       0});
    return;
  }
  File& f = files_.at(op.file_id);
  f.writing = false;
  if (op.status.ok()) {
    f.written = true;
    Result<std::optional<RowDrop>> committed = index_.SetState(op.key, TransferState::kReady);
    if (committed.ok()) Truncate(*committed);
    Unpin(op.pinned);
    ++stats_.disk.stored_total;
    ++stats_.disk.per_rank_total;
    stats_.disk.bytes_in_total += op.bytes;
    events_.push_back(
        {StoreEvent::Kind::kStored, op.checkpoint_id, {}, op.key, Status::Ok(), op.bytes});
    return;
  }
  // The transport left no file behind; descendants published meanwhile go too.
  Result<std::vector<RemovedRecord>> removed = index_.Remove(op.key);
  used_bytes_ -= f.bytes;
  files_.erase(op.file_id);
  if (listener_ != nullptr) listener_->OnRecordRemoved(op.key);
  if (removed.ok()) {
    for (const RemovedRecord& r : *removed) {
      if (r.key != op.key) Drop(r.key, r.location.value);
    }
  }
  ++stats_.store_failed;
  events_.push_back({StoreEvent::Kind::kStoreFailed, op.checkpoint_id, {}, op.key, op.status, 0});
}

void DiskStore::RecordLatency(const Operation& op) {
  if (!options_.latencies) return;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - op.started);
  DiskJobLatencies& l = *options_.latencies;
  LatencyHistogram* h = &l.store;
  switch (op.kind) {
    case Operation::Kind::kStore:
    case Operation::Kind::kSpill: h = &l.store; break;
    case Operation::Kind::kFetch:
    case Operation::Kind::kReadInto: h = &l.fetch; break;
    case Operation::Kind::kTruncate: h = &l.truncate; break;
    case Operation::Kind::kUnlink: h = &l.unlink; break;
  }
  h->Record(static_cast<uint64_t>(us.count()));
}

void DiskStore::FinishOperation(uint64_t, Operation& op) {
  RecordLatency(op);
  switch (op.kind) {
    case Operation::Kind::kStore: FinishStore(op); break;
    case Operation::Kind::kSpill: FinishSpill(op); break;
    case Operation::Kind::kReadInto: FinishReadInto(op); break;
    case Operation::Kind::kFetch:
      Unpin(op.pinned);
      if (op.status.ok()) {
        (void)index_.Touch(op.key, now_ms_);
        stats_.disk.bytes_out_total += op.bytes;
        events_.push_back(
            {StoreEvent::Kind::kFetched, 0, op.ticket, op.key, Status::Ok(), op.bytes});
      } else {
        ++stats_.fetch_failed;
        events_.push_back({StoreEvent::Kind::kFetchFailed, 0, op.ticket, op.key, op.status, 0});
      }
      break;
    case Operation::Kind::kTruncate:
    case Operation::Kind::kUnlink:
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
      break;
  }
}

}  // namespace strata
