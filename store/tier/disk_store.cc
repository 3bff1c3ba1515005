#include "store/tier/disk_store.h"

#include "store/tier/store_accounting.h"

namespace strata {

DiskStore::DiskStore(const CacheGeometry& geometry, std::unique_ptr<DiskTransport> transport,
                     DiskStoreOptions options)
    : files_(geometry, std::move(transport), std::move(options)) {}

DiskStore::~DiskStore() {
  if (!files_.closed()) (void)Close();
}

Result<std::unique_ptr<DiskStore>> DiskStore::Open(const CacheGeometry& geometry,
                                                   std::unique_ptr<DiskTransport> transport,
                                                   const std::vector<ScannedRecord>& records,
                                                   const DiskStoreOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  if (options.disk_limit_bytes == 0) return Status::InvalidArgument("disk limit is zero");
  std::unique_ptr<DiskStore> s(new DiskStore(geometry, std::move(transport), options));
  STRATA_RETURN_IF_ERROR(s->files_.Load(records));
  s->files_.stats().disk.records = s->files_.index().size();
  return s;
}

StoreOutcome DiskStore::Count(StoreOutcome o) { return CountOutcome(files_.stats(), o); }

std::optional<HostHit> DiskStore::Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                         uint64_t before) {
  ++files_.stats().lookups;
  std::optional<HostHit> h =
      files_.LookupIn(history, resident_tokens, before, {TransferState::kReady});
  if (!h) return std::nullopt;
  CountHit(files_.stats(), *h);
  return h;
}

StoreOutcome DiskStore::Store(const PublishedCheckpoint& cp) {
  return retries_.Note(cp.key, [&](RetryCause& cause) { return Offer(cp, cause); });
}

void DiskStore::Evicted(std::span<const EvictionNotice> notices) {
  retries_.Evicted(notices, files_.stats().retry_abandoned);
}

StoreOutcome DiskStore::Offer(const PublishedCheckpoint& cp, RetryCause& cause) {
  if (!files_.accepting()) return Count(StoreOutcome::kDisabled);
  PrefixIndex& index = files_.index();
  if (index.Contains(cp.key)) return Count(StoreOutcome::kPresent);
  if (files_.NameTaken(cp.key)) {
    cause = RetryCause::kInflight;
    return Count(StoreOutcome::kRetry);
  }
  const uint64_t pt = files_.geometry().page_tokens;
  const uint64_t chain_pages = cp.key.consumed / pt;
  STRATA_ASSERT(cp.chain.size() == chain_pages,
                "published chain must hold every page from the root");
  const bool parent_held = cp.parent && index.Contains(*cp.parent);
  if (parent_held) (void)index.Pin(*cp.parent);
  const auto tail =
      static_cast<uint32_t>(parent_held ? chain_pages - cp.parent->consumed / pt : chain_pages);
  const uint64_t bytes = RecordFileBytes(files_.layout(), {.tail_pages = tail});
  StoreOutcome outcome = StoreOutcome::kQueued;
  if (bytes > files_.configured_limit_bytes()) {
    outcome = StoreOutcome::kOversize;
  } else if (!files_.MakeRoom(bytes)) {
    outcome = StoreOutcome::kDeferred;
    cause = RetryCause::kBudget;
  }
  const std::optional<PrefixKey> parent = parent_held ? cp.parent : std::nullopt;
  if (outcome != StoreOutcome::kQueued) {
    if (parent_held) files_.Unpin({*cp.parent});
    return Count(outcome);
  }
  const uint64_t file_id = files_.AddFile({.tail_pages = tail,
                                           .bytes = bytes,
                                           .written = false,
                                           .writing = true,
                                           .parent = parent,
                                           .bucket = cp.bucket});
  Result<InsertResult> ins = index.Insert({cp.key, parent, cp.bucket, NodeLocation(file_id),
                                           TransferState::kInFlight, RowPresence::kPresent},
                                          files_.now_ms());
  if (parent_held) files_.Unpin({*cp.parent});
  STRATA_ASSERT(ins.ok() && ins->tail_page_count == tail, "index disagrees on the tail");
  (void)index.Pin(cp.key);
  RecordJob job = files_.JobFor(RecordJobKind::kStore, cp.key);
  job.page_ids.assign(cp.chain.end() - static_cast<std::ptrdiff_t>(tail), cp.chain.end());
  job.row_slot = cp.row_slot;
  Status s = files_.StartNow({.kind = DiskOperation::Kind::kStore,
                              .owner = this,
                              .key = cp.key,
                              .file_id = file_id,
                              .checkpoint_id = cp.checkpoint_id,
                              .pinned = {cp.key}},
                             std::move(job));
  if (!s.ok()) {
    (void)index.Remove(cp.key);
    files_.EraseFile(file_id);
    cause = RetryCause::kQueue;
    if (s.code() == StatusCode::kBusy) return Count(StoreOutcome::kRetry);
    if (s.code() == StatusCode::kInvalidArgument) return Count(StoreOutcome::kOversize);
    return Count(StoreOutcome::kDisabled);
  }
  files_.Charge(bytes);
  return Count(StoreOutcome::kQueued);
}

Status DiskStore::Fetch(const HostHit& hit, const InboundTicket& ticket) {
  if (files_.closed()) return Status::Aborted("disk store is closed");
  STRATA_RETURN_IF_ERROR(files_.stopped());
  if (ticket.page_ids.size() != hit.pages) {
    return Status::InvalidArgument("ticket has " + std::to_string(ticket.page_ids.size()) +
                                   " page ids for a restore of " + std::to_string(hit.pages));
  }
  DiskOperation op{.kind = DiskOperation::Kind::kFetch,
                   .owner = this,
                   .key = hit.endpoint,
                   .ticket = ticket.ticket};
  uint64_t chain_page = 0;  // global index of the record's first page in the chain
  size_t next_id = 0;
  for (size_t i = 0; i < hit.chain.size(); ++i) {
    const PrefixKey& k = hit.chain[i];
    std::optional<IndexEntry> e = files_.index().Find(k);
    if (!e || e->state != TransferState::kReady) {
      return Status::NotFound("record " + k.ToFileStem() + " left the disk since the lookup");
    }
    const bool endpoint = i + 1 == hit.chain.size();
    if (endpoint && e->row != RowPresence::kPresent) {
      return Status::NotFound("record " + k.ToFileStem() + " lost its row");
    }
    const uint64_t first = hit.skip_pages > chain_page
                               ? std::min<uint64_t>(hit.skip_pages - chain_page, e->tail_page_count)
                               : 0;
    const uint64_t count = e->tail_page_count - first;
    chain_page += e->tail_page_count;
    if (count == 0 && !endpoint) continue;
    if (next_id + count > ticket.page_ids.size()) {
      return Status::FailedPrecondition("chain of " + hit.endpoint.ToFileStem() + " changed");
    }
    RecordJob j = files_.JobFor(RecordJobKind::kFetch, k);
    j.first_page = static_cast<uint32_t>(first);
    j.page_ids.assign(ticket.page_ids.begin() + static_cast<std::ptrdiff_t>(next_id),
                      ticket.page_ids.begin() + static_cast<std::ptrdiff_t>(next_id + count));
    next_id += count;
    if (endpoint) j.row_slot = ticket.row_slot;
    op.unsubmitted.push_back(std::move(j));
  }
  if (next_id != ticket.page_ids.size()) {
    return Status::FailedPrecondition("chain of " + hit.endpoint.ToFileStem() + " changed");
  }
  for (const PrefixKey& k : hit.chain) (void)files_.index().Pin(k);
  op.pinned = hit.chain;
  files_.Start(std::move(op));
  ++files_.stats().fetches;
  return Status::Ok();
}

void DiskStore::FinishOperation(DiskOperation& op) {
  if (op.kind == DiskOperation::Kind::kStore) return FinishStore(op);
  if (op.kind == DiskOperation::Kind::kImport) return FinishImport(op);
  STRATA_ASSERT(op.kind == DiskOperation::Kind::kFetch, "DiskStore starts stores and fetches");
  FinishFetch(op);
}

void DiskStore::FinishStore(DiskOperation& op) {
  StoreStats& stats = files_.stats();
  switch (files_.FinishWrite(op)) {
    case WriteEnd::kCommitted:
      events_.push_back(
          {StoreEvent::Kind::kStored, op.checkpoint_id, {}, op.key, Status::Ok(), op.bytes});
      return;
    case WriteEnd::kOrphaned:
      op.status = Status::Aborted("record removed while its file was written");
      break;
    case WriteEnd::kFailed:
      // The transport left no file behind; descendants published meanwhile go too.
      files_.RemoveWithDescendants(op.key);
      break;
  }
  ++stats.store_failed;
  events_.push_back({StoreEvent::Kind::kStoreFailed, op.checkpoint_id, {}, op.key, op.status, 0});
}

void DiskStore::FinishFetch(DiskOperation& op) {
  files_.Unpin(op.pinned);
  if (op.status.ok()) {
    (void)files_.index().Touch(op.key, files_.now_ms());
    files_.stats().disk.bytes_out_total += op.bytes;
    events_.push_back({StoreEvent::Kind::kFetched, 0, op.ticket, op.key, Status::Ok(), op.bytes});
    return;
  }
  ++files_.stats().fetch_failed;
  // A file that failed its checksums would fail every later fetch: the record
  // (and what extends it) goes from the index and every rank's disk.
  if (files_.NoteCorruptRead(op.failed_key, op.status)) files_.RemoveWithDescendants(op.failed_key);
  events_.push_back({StoreEvent::Kind::kFetchFailed, 0, op.ticket, op.key, op.status, 0});
}

void DiskStore::Poll(uint64_t now_ms, std::vector<StoreEvent>& events) {
  files_.Poll(now_ms);
  Status stopped = files_.stopped();
  if (!stopped.ok() && !stopped_reported_) {
    stopped_reported_ = true;
    events_.push_back({StoreEvent::Kind::kStopped, 0, {}, {}, stopped, 0});
  }
  for (StoreEvent& e : events_) events.push_back(std::move(e));
  events_.clear();
}

StoreStats DiskStore::Stats() const { return files_.Stats(); }

Status DiskStore::Close() { return files_.Close(); }

}  // namespace strata
