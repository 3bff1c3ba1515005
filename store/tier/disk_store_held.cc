// DiskStore's held records: the disk tier of a composite store (seed 2.4).
// A held record's bytes live in host memory; its index entry and file come
// and go here, and every removal or row drop is told to the listener.
#include "store/tier/disk_store.h"

#include "store/tier/store_accounting.h"

namespace strata {

std::optional<HostHit> DiskStore::LookupIn(const PrefixHistory& history, uint64_t resident_tokens,
                                           uint64_t before, StateSet states) const {
  if (closed_ || !transport_->stopped().ok()) return std::nullopt;
  std::optional<LookupHit> hit = index_.Lookup(history, resident_tokens, before, states);
  if (!hit) return std::nullopt;
  return MakeHostHit(*hit, resident_tokens, page_bytes_all_ranks_, row_bytes_all_ranks_,
                     Tier::kDisk);
}

Result<uint32_t> DiskStore::InsertHeld(const PublishedCheckpoint& cp) {
  if (closed_ || !transport_->stopped().ok()) {
    return Status::Aborted("disk tier is closed or stopped");
  }
  if (index_.Contains(cp.key)) {
    return Status::AlreadyExists("record " + cp.key.ToFileStem() + " is indexed");
  }
  if (orphaned_names_.count(cp.key) != 0) {
    return Status::Busy("an earlier file of " + cp.key.ToFileStem() + " is still being written");
  }
  STRATA_ASSERT(cp.chain.size() == cp.key.consumed / geometry_.page_tokens,
                "published chain must hold every page from the root");
  const bool parent_held = cp.parent && index_.Contains(*cp.parent);
  const uint64_t file_id = next_file_++;
  STRATA_ASSIGN_OR_RETURN(
      InsertResult ins,
      index_.Insert({cp.key, parent_held ? cp.parent : std::nullopt, cp.bucket,
                     NodeLocation(file_id), TransferState::kInFlight, RowPresence::kPresent},
                    now_ms_));
  File f;
  f.tail_pages = ins.tail_page_count;
  f.written = false;
  files_[file_id] = f;
  return ins.tail_page_count;
}

Status DiskStore::MarkParked(const PrefixKey& key) {
  return index_.SetState(key, TransferState::kParked).status();
}

void DiskStore::DropHeld(const PrefixKey& key) {
  Result<std::vector<RemovedRecord>> removed = index_.Remove(key);
  if (!removed.ok()) return;
  for (const RemovedRecord& r : *removed) Drop(r.key, r.location.value);
}

std::optional<FileShape> DiskStore::ShapeOf(const PrefixKey& key) const {
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e) return std::nullopt;
  const File& f = files_.at(e->location.value);
  return FileShape{f.tail_pages, f.has_row, f.replicated_pages, f.replicated_row};
}

Status DiskStore::Spill(const PrefixKey& key, bool replicated_pages, bool replicated_row,
                        HostBuffers buffers, uint64_t tag) {
  if (closed_ || !transport_->stopped().ok()) {
    return Status::Aborted("disk tier is closed or stopped");
  }
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e || e->state != TransferState::kParked) {
    return Status::FailedPrecondition("record " + key.ToFileStem() + " is not parked");
  }
  const uint64_t file_id = e->location.value;
  const bool has_row = files_.at(file_id).has_row;
  if (!has_row) buffers.row.clear();
  if (has_row && buffers.row.empty()) {
    return Status::InvalidArgument("spill of " + key.ToFileStem() + " lacks its row");
  }
  const uint64_t bytes = RecordFileBytes(layout_, files_.at(file_id).tail_pages, has_row,
                                         replicated_pages, replicated_row && has_row);
  if (bytes > options_.disk_limit_bytes) {
    return Status::FailedPrecondition("record " + key.ToFileStem() + " (" + std::to_string(bytes) +
                                      " bytes) exceeds the disk limit");
  }
  if (!MakeRoom(bytes)) {
    return Status::Busy("no room under the disk limit for " + key.ToFileStem());
  }
  File& f = files_.at(file_id);  // MakeRoom only evicts ready records
  f.replicated_pages = replicated_pages;
  f.replicated_row = replicated_row && has_row;
  f.bytes = bytes;
  f.writing = true;
  used_bytes_ += bytes;
  (void)index_.SetState(key, TransferState::kSpilling);
  (void)index_.Pin(key);
  Operation op;
  op.kind = Operation::Kind::kSpill;
  op.key = key;
  op.file_id = file_id;
  op.tag = tag;
  op.pinned = {key};
  op.host = std::move(buffers);
  op.unsubmitted.push_back(JobFor(RecordJobKind::kStore, key));
  StartOperation(std::move(op));
  return Status::Ok();
}

Status DiskStore::ReadInto(const PrefixKey& key, uint32_t first_page, HostBuffers buffers,
                           uint64_t tag) {
  if (closed_) return Status::Aborted("disk tier is closed");
  STRATA_RETURN_IF_ERROR(transport_->stopped());
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e || e->state != TransferState::kReady) {
    return Status::NotFound("record " + key.ToFileStem() + " is not on disk");
  }
  if (!buffers.row.empty() && e->row != RowPresence::kPresent) {
    return Status::NotFound("record " + key.ToFileStem() + " lost its row");
  }
  RecordJob j = JobFor(RecordJobKind::kFetch, key);
  j.first_page = first_page;
  (void)index_.Pin(key);
  Operation op;
  op.kind = Operation::Kind::kReadInto;
  op.key = key;
  op.tag = tag;
  op.pinned = {key};
  op.host = std::move(buffers);
  op.unsubmitted.push_back(std::move(j));
  StartOperation(std::move(op));
  return Status::Ok();
}

void DiskStore::TakeHostDone(std::vector<HostJobDone>& out) {
  for (HostJobDone& d : host_done_) out.push_back(std::move(d));
  host_done_.clear();
}

void DiskStore::FinishSpill(Operation& op) {
  if (FinishOrphanedWrite(op)) {
    host_done_.push_back({op.tag, op.key, true,
                          Status::Aborted("record removed while its file was written"), false, 0});
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
    ++(f.replicated_pages || f.replicated_row ? stats_.disk.packed_total
                                              : stats_.disk.per_rank_total);
    stats_.disk.bytes_in_total += op.bytes;
    host_done_.push_back({op.tag, op.key, true, Status::Ok(), false, op.bytes});
    return;
  }
  used_bytes_ -= f.bytes;  // the writer removed its temporary file
  f.bytes = 0;
  if (op.status.code() == StatusCode::kFsFull) {
    // Out of space: the record stays parked in host memory and is retried.
    (void)index_.SetState(op.key, TransferState::kParked);
    Unpin(op.pinned);
    host_done_.push_back({op.tag, op.key, true, op.status, true, 0});
    return;
  }
  ++stats_.disk.dropped_io_total;
  host_done_.push_back({op.tag, op.key, true, op.status, false, 0});
  DropHeld(op.key);  // terminal: the record and its descendants go
}

void DiskStore::FinishReadInto(Operation& op) {
  Unpin(op.pinned);
  if (op.status.ok()) {
    stats_.disk.bytes_out_total += op.bytes;
  } else if (op.status.code() == StatusCode::kCorruption) {
    ++stats_.disk.dropped_io_total;  // the file failed its checksums: it goes
    DropHeld(op.key);
  }
  host_done_.push_back({op.tag, op.key, false, op.status, false, op.bytes});
}

}  // namespace strata
