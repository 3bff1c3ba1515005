// DiskStore as a RecordIntake (disk_store.h): a record from outside the
// instance (a pool claim) is written as a committed record of this tier,
// every rank its own share.
#include <spdlog/spdlog.h>

#include <cstring>
#include <string>

#include "store/tier/disk_handover.h"
#include "store/tier/disk_store.h"

namespace strata {
namespace {

// The bytes of `pieces`, summed.
uint64_t Total(const std::vector<std::span<const std::byte>>& pieces) {
  uint64_t n = 0;
  for (const auto& p : pieces) n += p.size();
  return n;
}

}  // namespace

bool DiskStore::Holds(const PrefixKey& key) const {
  const std::optional<IndexEntry> e = files_.index().Find(key);
  return files_.accepting() && e && e->state == TransferState::kReady;
}

Status DiskStore::Import(const RecordView& record, uint64_t now_ms) {
  (void)now_ms;  // the index stamps its own clock (files_.now_ms())
  if (!files_.accepting()) return Status::Aborted("disk tier is closed or stopped");
  PrefixIndex& index = files_.index();
  const std::string name = record.key.ToFileStem();
  if (index.Contains(record.key)) return Status::AlreadyExists("record " + name + " is held");
  if (files_.NameTaken(record.key)) {
    return Status::Busy("the file of " + name + " is still being removed");
  }
  // The tail the index computes for this key: below the parent it holds.
  const uint64_t pt = files_.geometry().page_tokens;
  const bool parent_held = record.parent && index.Contains(*record.parent);
  const uint64_t tail = (record.key.consumed - (parent_held ? record.parent->consumed : 0)) / pt;
  if (record.key.consumed % pt != 0 || tail != record.tail_pages || tail == 0 ||
      (record.parent && !parent_held)) {
    return Status::FailedPrecondition(
        "record " + name + " of " + std::to_string(record.tail_pages) +
        " tail pages does not extend what this tier holds (" + std::to_string(tail) + " pages)");
  }
  // Each rank's share, and the record as the caller lays it out: every
  // rank's share side by side (a replicated part: one share).
  const RecordLayout& layout = files_.layout();
  const uint32_t shares = files_.share_count();
  const bool has_row = record.has_row();
  const bool rp = record.replicated_pages;
  const bool rr = has_row && record.replicated_row;
  const uint64_t share_page = layout.stored_page_record_bytes(rp);
  const uint64_t share_row = has_row ? layout.stored_row_segment_bytes(rr) : 0;
  const uint64_t page_bytes = share_page * (rp ? 1 : shares);
  const uint64_t row_bytes = share_row * (rr ? 1 : shares);
  for (const auto& p : record.pages) {
    if (p.size() != page_bytes) {
      return Status::InvalidArgument("record " + name + " has a page record of " +
                                     std::to_string(p.size()) + " bytes, this tier's are " +
                                     std::to_string(page_bytes));
    }
  }
  if (record.pages.size() != tail || Total(record.row) != row_bytes) {
    return Status::InvalidArgument("record " + name + " holds " +
                                   std::to_string(record.pages.size()) + " pages and " +
                                   std::to_string(Total(record.row)) + " row bytes, expected " +
                                   std::to_string(tail) + " and " + std::to_string(row_bytes));
  }
  const uint64_t bytes = RecordFileBytes(layout, {.tail_pages = static_cast<uint32_t>(tail),
                                                  .has_row = has_row,
                                                  .replicated_pages = rp,
                                                  .replicated_row = rr});
  if (tail * share_page + share_row > files_.share_bytes_max()) {
    return Status::FailedPrecondition("record " + name + " moves " +
                                      std::to_string(tail * share_page + share_row) +
                                      " bytes per rank, more than a record link carries at once");
  }
  if (bytes > files_.configured_limit_bytes()) {
    return Status::FailedPrecondition("record " + name + " (" + std::to_string(bytes) +
                                      " bytes) exceeds the disk limit");
  }
  if (parent_held) (void)index.Pin(*record.parent);
  const bool room = files_.MakeRoom(bytes);
  if (!room) {
    if (parent_held) files_.Unpin({*record.parent});
    return Status::Busy("no room under the disk limit for " + name);
  }

  // A copy of the bytes the transport writes from, held by the operation.
  auto copy = std::make_shared<AlignedBytes>(tail * page_bytes + row_bytes);
  std::byte* const base = copy->data();
  for (uint64_t i = 0; i < tail; ++i) {
    std::memcpy(base + i * page_bytes, record.pages[i].data(), page_bytes);
  }
  uint64_t at = tail * page_bytes;
  for (const auto& p : record.row) {
    std::memcpy(base + at, p.data(), p.size());
    at += p.size();
  }
  std::vector<HostBuffers> by_rank(shares);
  for (uint32_t r = 0; r < shares; ++r) {
    for (uint64_t i = 0; i < tail; ++i) {
      by_rank[r].pages.push_back({base + i * page_bytes + (rp ? 0 : r * share_page), share_page});
    }
    if (has_row) {
      by_rank[r].row.push_back({base + tail * page_bytes + (rr ? 0 : r * share_row), share_row});
    }
  }

  const std::optional<PrefixKey> parent = parent_held ? record.parent : std::nullopt;
  const uint64_t file_id = files_.AddFile({.tail_pages = static_cast<uint32_t>(tail),
                                           .has_row = has_row,
                                           .replicated_pages = rp,
                                           .replicated_row = rr,
                                           .bytes = bytes,
                                           .written = false,
                                           .writing = true,
                                           .parent = parent,
                                           .bucket = record.bucket});
  Result<InsertResult> ins = index.Insert(
      {record.key, parent, record.bucket, NodeLocation(file_id), TransferState::kInFlight,
       has_row ? RowPresence::kPresent : RowPresence::kPageOnly},
      files_.now_ms());
  if (parent_held) files_.Unpin({*record.parent});
  if (!ins.ok() || ins->tail_page_count != tail) {
    if (ins.ok()) (void)index.Remove(record.key);
    files_.EraseFile(file_id);
    return Status::FailedPrecondition("the index refused record " + name +
                                      (ins.ok() ? "" : ": " + ins.status().message()));
  }
  (void)index.Pin(record.key);
  RecordJob job = files_.JobFor(RecordJobKind::kStore, record.key);
  job.host_data = shares > 1;
  job.host_row = job.host_data && has_row;
  DiskOperation op{.kind = DiskOperation::Kind::kImport,
                   .owner = this,
                   .key = record.key,
                   .file_id = file_id,
                   .pinned = {record.key}};
  op.host_by_key[record.key] = std::move(by_rank);
  op.keep_alive = std::move(copy);
  op.unsubmitted.push_back(std::move(job));
  files_.Charge(bytes);
  files_.Start(std::move(op));
  return Status::Ok();
}

ImportState DiskStore::Imported(const PrefixKey& key) const {
  std::optional<IndexEntry> e = files_.index().Find(key);
  if (!e) return ImportState::kGone;
  return e->state == TransferState::kReady ? ImportState::kLanded : ImportState::kWriting;
}

void DiskStore::FinishImport(DiskOperation& op) {
  switch (files_.FinishWrite(op)) {
    case WriteEnd::kCommitted:
    case WriteEnd::kOrphaned: return;
    case WriteEnd::kFailed:
      spdlog::warn("disk tier: writing record {} from the pool failed ({}); it is dropped",
                   op.key.ToFileStem(), op.status.ToString());
      files_.RemoveWithDescendants(op.key);
      return;
  }
}

}  // namespace strata
