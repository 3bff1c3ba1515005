// DiskFiles: the index, files and byte budget a disk tier's faces share;
// loading a scan, lookups, eviction and removal.
#include "store/tier/disk_files.h"

#include <spdlog/spdlog.h>

#include "store/tier/store_accounting.h"

namespace strata {

uint64_t RecordFileBytes(const RecordLayout& layout, const FileShape& shape) {
  const uint64_t header = kRecordAlign;
  const uint64_t checksums = AlignUp(8 * uint64_t{shape.tail_pages});
  const uint64_t pages = shape.tail_pages * layout.stored_page_record_bytes(shape.replicated_pages);
  const uint64_t row = shape.has_row ? layout.stored_row_segment_bytes(shape.replicated_row) : 0;
  return header + checksums + pages + row;
}

DiskFiles::DiskFiles(const CacheGeometry& geometry, std::unique_ptr<DiskTransport> transport,
                     DiskStoreOptions options)
    : geometry_(geometry),
      layout_(geometry),
      transport_(std::move(transport)),
      options_(std::move(options)),
      index_(geometry.page_tokens),
      limit_bytes_(options_.disk_limit_bytes) {
  for (const RankGeometry& g : geometry.ranks) {
    page_bytes_all_ranks_ += g.page_bytes();
    row_bytes_all_ranks_ += g.row.unit_bytes;
  }
}

Status DiskFiles::Load(const std::vector<ScannedRecord>& records) {
  std::vector<CommittedRecord> committed;
  std::unordered_map<PrefixKey, uint64_t> file_of;
  for (const ScannedRecord& r : records) {
    const uint64_t id = AddFile({.tail_pages = r.tail_page_count,
                                 .has_row = r.row_present,
                                 .replicated_pages = r.pages_replicated,
                                 .replicated_row = r.row_replicated,
                                 .bytes = r.file_bytes,
                                 .parent = r.parent,
                                 .bucket = r.bucket});
    file_of[r.key] = id;
    committed.push_back({r.key, r.parent, r.bucket, r.tail_page_count, NodeLocation(id),
                         r.row_present ? RowPresence::kPresent : RowPresence::kPageOnly,
                         static_cast<uint64_t>(std::max<int64_t>(0, r.mtime_unix_ns / 1'000'000))});
    used_bytes_ += r.file_bytes;
  }
  STRATA_ASSIGN_OR_RETURN(LoadReport report, index_.LoadCommitted(std::move(committed)));
  std::vector<PrefixKey> drop;
  for (const LoadReport::Rejected& r : report.rejected) drop.push_back(r.key);
  for (const PrefixKey& k : report.orphans) drop.push_back(k);
  for (const RemovedRecord& r : report.pruned) drop.push_back(r.key);
  for (const PrefixKey& k : drop) Unlink(k, file_of.at(k));
  return Status::Ok();
}

StoreStats DiskFiles::Stats() const {
  StoreStats s = stats_;
  s.disk.records = index_.size();
  s.disk.bytes = used_bytes_;
  s.disk_limit_bytes = limit_bytes_;
  return s;
}

std::optional<HostHit> DiskFiles::LookupIn(const PrefixHistory& history, uint64_t resident_tokens,
                                           uint64_t before, StateSet states) const {
  if (!accepting()) return std::nullopt;
  std::optional<LookupHit> hit = index_.Lookup(history, resident_tokens, before, states);
  if (!hit) return std::nullopt;
  return MakeHostHit(*hit, resident_tokens, page_bytes_all_ranks_, row_bytes_all_ranks_,
                     Tier::kDisk);
}

std::optional<FileShape> DiskFiles::ShapeOf(const PrefixKey& key) const {
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e) return std::nullopt;
  const File& f = files_.at(e->location.value);
  return FileShape{f.tail_pages, f.has_row, f.replicated_pages, f.replicated_row};
}

RecordJob DiskFiles::JobFor(RecordJobKind kind, const PrefixKey& key) const {
  RecordJob j;
  j.kind = kind;
  j.key = key;
  std::optional<IndexEntry> e = index_.Find(key);
  if (e) {
    const File& f = files_.at(e->location.value);
    j.parent = e->parent;
    j.bucket = e->bucket_digest;
    j.tail_pages = e->tail_page_count;
    j.replicated_pages = f.replicated_pages;
    j.replicated_row = f.replicated_row;
  }
  return j;
}

uint64_t DiskFiles::AddFile(const File& file) {
  const uint64_t id = next_file_++;
  files_[id] = file;
  return id;
}

bool DiskFiles::MakeRoom(uint64_t bytes) {
  while (used_bytes_ - releasing_bytes_ + bytes > limit_bytes_) {
    EvictionDecision d =
        index_.EvictOne([](const IndexEntry& e) { return e.state == TransferState::kReady; });
    if (d.empty()) {
      RetryConfiguredLimit(bytes);
      break;
    }
    ApplyEvictionDecision(d);
  }
  return used_bytes_ + bytes <= limit_bytes_;
}

void DiskFiles::ApplyEvictionDecision(const EvictionDecision& d) {
  stats_.disk.evicted_total += d.removed.size();
  ApplyEvicted(d.removed);
  if (d.compacted) {
    ++stats_.disk.compacted_total;
    Truncate(d.compacted);
  }
}

void DiskFiles::RetryConfiguredLimit(uint64_t bytes) {
  const bool fits_configured = used_bytes_ + bytes <= options_.disk_limit_bytes;
  if (limit_bytes_ == options_.disk_limit_bytes || !fits_configured ||
      now_ms_ < lowered_at_ms_ + kRetryConfiguredLimitMs) {
    return;
  }
  spdlog::info(
      "disk tier: nothing left to evict under the lowered limit of {} bytes; trying the "
      "configured limit of {} bytes again (another write failing for want of space lowers it "
      "again)",
      limit_bytes_, options_.disk_limit_bytes);
  limit_bytes_ = options_.disk_limit_bytes;
}

void DiskFiles::Unlink(const PrefixKey& key, uint64_t file_id) {
  DiskOperation op;
  op.kind = DiskOperation::Kind::kUnlink;
  op.key = key;
  op.file_id = file_id;
  RecordJob j;
  j.kind = RecordJobKind::kUnlink;
  j.key = key;
  op.unsubmitted.push_back(std::move(j));
  auto f = files_.find(file_id);
  if (f != files_.end()) {
    op.release_bytes = f->second.bytes;
    releasing_bytes_ += f->second.bytes;
    files_.erase(f);
  }
  Start(std::move(op));
}

void DiskFiles::Drop(const PrefixKey& key, uint64_t file_id) {
  if (listener_ != nullptr) listener_->OnRecordRemoved(key);
  auto f = files_.find(file_id);
  if (f != files_.end() && f->second.writing) {
    orphaned_names_[key] = file_id;
    orphaned_writes_[file_id] = f->second;
    files_.erase(f);
    return;
  }
  if (f != files_.end() && !f->second.written) {  // held in host memory: no file
    used_bytes_ -= f->second.bytes;
    files_.erase(f);
    return;
  }
  Unlink(key, file_id);
}

void DiskFiles::RemoveWithDescendants(const PrefixKey& key) {
  Result<std::vector<RemovedRecord>> removed = index_.Remove(key);
  if (removed.ok()) ApplyRemoved(*removed);
}

bool DiskFiles::NoteCorruptRead(const PrefixKey& key, const Status& status) {
  if (status.code() != StatusCode::kCorruption) return false;
  ++stats_.fetch_checksum_failures;
  ++stats_.disk.dropped_io_total;
  // The status names the file and the page or row that failed; across
  // processes it starts with the rank that found it (the completion tracker's
  // context), in one process the file holds every rank's share.
  spdlog::warn(
      "record {} failed its checksums on fetch ({}); removing it and its descendants "
      "from every rank",
      key.ToFileStem(), status.message());
  return true;
}

void DiskFiles::ApplyRemoved(const std::vector<RemovedRecord>& removed) {
  for (const RemovedRecord& r : removed) Drop(r.key, r.location.value);
}

void DiskFiles::Truncate(const std::optional<RowDrop>& drop) {
  if (!drop) return;
  if (listener_ != nullptr) listener_->OnRowDropped(drop->key);
  File& f = files_.at(drop->location.value);
  if (!f.has_row) return;
  // The index never drops the row of a pinned record, and writes pin theirs.
  STRATA_ASSERT(!f.writing, "row dropped while its file is written");
  if (!f.written) {  // held: a later spill writes the record without its row
    f.has_row = false;
    return;
  }
  DiskOperation op;
  op.kind = DiskOperation::Kind::kTruncate;
  op.key = drop->key;
  op.unsubmitted.push_back(JobFor(RecordJobKind::kTruncate, drop->key));
  f.has_row = false;
  const uint64_t row = f.bytes - RecordFileBytes(layout_, {.tail_pages = f.tail_pages,
                                                           .has_row = false,
                                                           .replicated_pages = f.replicated_pages});
  f.bytes -= row;
  op.release_bytes = row;
  releasing_bytes_ += row;
  Start(std::move(op));
}

void DiskFiles::Unpin(const std::vector<PrefixKey>& keys) {
  UnpinEach(index_, keys, [this](const std::optional<RowDrop>& drop) { Truncate(drop); });
}

}  // namespace strata
