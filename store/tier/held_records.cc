#include "store/tier/held_records.h"

namespace strata {

Result<uint32_t> HeldRecords::InsertHeld(const PublishedCheckpoint& cp) {
  if (!files_.accepting()) return Status::Aborted("disk tier is closed or stopped");
  PrefixIndex& index = files_.index();
  if (index.Contains(cp.key)) {
    return Status::AlreadyExists("record " + cp.key.ToFileStem() + " is indexed");
  }
  if (files_.NameTaken(cp.key)) {
    return Status::Busy("an earlier file of " + cp.key.ToFileStem() + " is still being written");
  }
  STRATA_ASSERT(cp.chain.size() == cp.key.consumed / files_.geometry().page_tokens,
                "published chain must hold every page from the root");
  const bool parent_held = cp.parent && index.Contains(*cp.parent);
  const uint64_t file_id = files_.AddFile(
      {.written = false, .parent = parent_held ? cp.parent : std::nullopt, .bucket = cp.bucket});
  Result<InsertResult> ins =
      index.Insert({cp.key, parent_held ? cp.parent : std::nullopt, cp.bucket,
                    NodeLocation(file_id), TransferState::kInFlight, RowPresence::kPresent},
                   files_.now_ms());
  if (!ins.ok()) {
    files_.EraseFile(file_id);
    return ins.status();
  }
  files_.file(file_id).tail_pages = ins->tail_page_count;
  return ins->tail_page_count;
}

Status HeldRecords::MarkCopied(const PrefixKey& key) {
  std::optional<IndexEntry> e = files_.index().Find(key);
  if (!e) return Status::NotFound("record " + key.ToFileStem() + " is not indexed");
  if (e->state != TransferState::kInFlight) return Status::Ok();  // written meanwhile
  const bool writing = files_.file(e->location.value).writing;
  return files_.index()
      .SetState(key, writing ? TransferState::kSpilling : TransferState::kParked)
      .status();
}

Result<uint64_t> HeldRecords::BeginWrite(const PrefixKey& key, SharePacking packing,
                                         bool in_flight_too) {
  if (!files_.accepting()) return Status::Aborted("disk tier is closed or stopped");
  std::optional<IndexEntry> e = files_.index().Find(key);
  const bool state_ok = e && (e->state == TransferState::kParked ||
                              (in_flight_too && e->state == TransferState::kInFlight));
  if (!state_ok || files_.file(e->location.value).writing) {
    return Status::FailedPrecondition("record " + key.ToFileStem() + " is not held unwritten");
  }
  const uint64_t file_id = e->location.value;
  const DiskFiles::File& held = files_.file(file_id);
  const FileShape shape{.tail_pages = held.tail_pages,
                        .has_row = held.has_row,
                        .replicated_pages = packing.pages,
                        .replicated_row = packing.row && held.has_row};
  const uint64_t bytes = RecordFileBytes(files_.layout(), shape);
  if (bytes > files_.configured_limit_bytes()) {
    return Status::FailedPrecondition("record " + key.ToFileStem() + " (" + std::to_string(bytes) +
                                      " bytes) exceeds the disk limit");
  }
  if (!files_.MakeRoom(bytes)) {
    return Status::Busy("no room under the disk limit for " + key.ToFileStem());
  }
  DiskFiles::File& f = files_.file(file_id);  // MakeRoom only evicts ready records
  f.replicated_pages = shape.replicated_pages;
  f.replicated_row = shape.replicated_row;
  f.bytes = bytes;
  f.writing = true;
  files_.Charge(bytes);
  if (e->state == TransferState::kParked) {
    (void)files_.index().SetState(key, TransferState::kSpilling);
  }
  (void)files_.index().Pin(key);
  return file_id;
}

Status HeldRecords::Spill(const PrefixKey& key, SharePacking packing, HostBuffers buffers,
                          uint64_t tag) {
  std::optional<IndexEntry> e = files_.index().Find(key);
  if (e && e->state == TransferState::kParked) {
    const bool has_row = files_.file(e->location.value).has_row;
    if (!has_row) buffers.row.clear();
    if (has_row && buffers.row.empty()) {
      return Status::InvalidArgument("spill of " + key.ToFileStem() + " lacks its row");
    }
  }
  STRATA_ASSIGN_OR_RETURN(const uint64_t file_id,
                          BeginWrite(key, packing, /*in_flight_too=*/false));
  DiskOperation op{.kind = DiskOperation::Kind::kSpill,
                   .owner = this,
                   .key = key,
                   .file_id = file_id,
                   .tag = tag,
                   .host = std::move(buffers),
                   .pinned = {key}};
  op.unsubmitted.push_back(files_.JobFor(RecordJobKind::kStore, key));
  files_.Start(std::move(op));
  return Status::Ok();
}

Status HeldRecords::WriteFromDevice(const PrefixKey& key, std::vector<PageId> page_ids,
                                    StateSlot row_slot, uint64_t tag) {
  if (std::optional<IndexEntry> e = files_.index().Find(key);
      e && page_ids.size() != e->tail_page_count) {
    return Status::InvalidArgument("write of " + key.ToFileStem() + " names " +
                                   std::to_string(page_ids.size()) + " pages for a tail of " +
                                   std::to_string(e->tail_page_count));
  }
  STRATA_ASSIGN_OR_RETURN(const uint64_t file_id, BeginWrite(key, {}, /*in_flight_too=*/true));
  RecordJob job = files_.JobFor(RecordJobKind::kStore, key);
  job.page_ids = std::move(page_ids);
  if (files_.file(file_id).has_row) job.row_slot = row_slot;
  DiskOperation op{.kind = DiskOperation::Kind::kSpill,
                   .owner = this,
                   .key = key,
                   .file_id = file_id,
                   .tag = tag,
                   .pinned = {key}};
  op.unsubmitted.push_back(std::move(job));
  files_.Start(std::move(op));
  return Status::Ok();
}

Status HeldRecords::ReadInto(const PrefixKey& key, uint32_t first_page, HostBuffers buffers,
                             uint64_t tag) {
  if (files_.closed()) return Status::Aborted("disk tier is closed");
  STRATA_RETURN_IF_ERROR(files_.stopped());
  std::optional<IndexEntry> e = files_.index().Find(key);
  if (!e || e->state != TransferState::kReady) {
    return Status::NotFound("record " + key.ToFileStem() + " is not on disk");
  }
  if (!buffers.row.empty() && e->row != RowPresence::kPresent) {
    return Status::NotFound("record " + key.ToFileStem() + " lost its row");
  }
  RecordJob j = files_.JobFor(RecordJobKind::kFetch, key);
  j.first_page = first_page;
  (void)files_.index().Pin(key);
  DiskOperation op{.kind = DiskOperation::Kind::kReadInto,
                   .owner = this,
                   .key = key,
                   .tag = tag,
                   .host = std::move(buffers),
                   .pinned = {key}};
  op.unsubmitted.push_back(std::move(j));
  files_.Start(std::move(op));
  return Status::Ok();
}

void HeldRecords::TakeHostDone(std::vector<HostJobDone>& out) {
  for (HostJobDone& d : done_) out.push_back(std::move(d));
  done_.clear();
}

void HeldRecords::FinishOperation(DiskOperation& op) {
  if (op.kind == DiskOperation::Kind::kSpill) return FinishSpill(op);
  STRATA_ASSERT(op.kind == DiskOperation::Kind::kReadInto, "HeldRecords starts spills and reads");
  FinishReadInto(op);
}

void HeldRecords::FinishSpill(DiskOperation& op) {
  HostJobDone done{.tag = op.tag, .key = op.key, .kind = HostJobDone::Kind::kSpill};
  switch (files_.FinishWrite(op)) {
    case WriteEnd::kCommitted: done.bytes = op.bytes; break;
    case WriteEnd::kOrphaned:
      done.status = Status::Aborted("record removed while its file was written");
      break;
    case WriteEnd::kFailed: {
      done.status = op.status;
      const bool from_device = !op.host.has_value();  // a fan-out write
      if (op.status.code() == StatusCode::kFsFull || from_device) {
        // The record stays held in host memory (parked, or still being
        // copied there) and is written from there later.
        if (std::optional<IndexEntry> e = files_.index().Find(op.key);
            e && e->state == TransferState::kSpilling) {
          (void)files_.index().SetState(op.key, TransferState::kParked);
        }
        files_.Unpin(op.pinned);
        done.kept = true;
        break;
      }
      ++files_.stats().disk.dropped_io_total;
      done_.push_back(std::move(done));
      DropHeld(op.key);  // terminal: the record and its descendants go
      return;
    }
  }
  done_.push_back(std::move(done));
}

void HeldRecords::FinishReadInto(DiskOperation& op) {
  files_.Unpin(op.pinned);
  if (op.status.ok()) {
    files_.stats().disk.bytes_out_total += op.bytes;
  } else if (files_.NoteCorruptRead(op.key, op.status)) {
    DropHeld(op.key);  // the file failed its checksums: it goes
  }
  done_.push_back({.tag = op.tag,
                   .key = op.key,
                   .kind = HostJobDone::Kind::kReadInto,
                   .status = op.status,
                   .bytes = op.bytes});
}

}  // namespace strata
