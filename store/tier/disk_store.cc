#include "store/tier/disk_store.h"

#include "store/tier/store_accounting.h"

namespace strata {

uint64_t RecordFileBytes(const RecordLayout& layout, uint64_t tail_pages, bool with_row,
                         bool replicated_pages, bool replicated_row) {
  const uint64_t header = kRecordAlign;
  const uint64_t checksums = AlignUp(8 * tail_pages);
  const uint64_t pages = tail_pages * layout.stored_page_record_bytes(replicated_pages);
  const uint64_t row = with_row ? layout.stored_row_segment_bytes(replicated_row) : 0;
  return header + checksums + pages + row;
}

DiskStore::DiskStore(const CacheGeometry& geometry, std::unique_ptr<DiskTransport> transport,
                     DiskStoreOptions options)
    : geometry_(geometry),
      layout_(geometry),
      transport_(std::move(transport)),
      options_(std::move(options)),
      index_(geometry.page_tokens) {
  for (const RankGeometry& g : geometry.ranks) {
    page_bytes_all_ranks_ += g.page_bytes();
    row_bytes_all_ranks_ += g.row.unit_bytes;
  }
}

DiskStore::~DiskStore() {
  if (!closed_) (void)Close();
}

Result<std::unique_ptr<DiskStore>> DiskStore::Open(const CacheGeometry& geometry,
                                                   std::unique_ptr<DiskTransport> transport,
                                                   const std::vector<ScannedRecord>& records,
                                                   const DiskStoreOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  if (options.disk_limit_bytes == 0) return Status::InvalidArgument("disk limit is zero");
  std::unique_ptr<DiskStore> s(new DiskStore(geometry, std::move(transport), options));
  std::vector<CommittedRecord> committed;
  std::unordered_map<PrefixKey, uint64_t> file_of;
  for (const ScannedRecord& r : records) {
    const uint64_t id = s->next_file_++;
    s->files_[id] =
        File{r.tail_page_count, r.row_present, r.pages_replicated, r.row_replicated, r.file_bytes};
    file_of[r.key] = id;
    committed.push_back({r.key, r.parent, r.bucket, r.tail_page_count, NodeLocation(id),
                         r.row_present ? RowPresence::kPresent : RowPresence::kPageOnly,
                         static_cast<uint64_t>(std::max<int64_t>(0, r.mtime_unix_ns / 1'000'000))});
    s->used_bytes_ += r.file_bytes;
  }
  STRATA_ASSIGN_OR_RETURN(LoadReport report, s->index_.LoadCommitted(std::move(committed)));
  std::vector<PrefixKey> drop;
  for (const LoadReport::Rejected& r : report.rejected) drop.push_back(r.key);
  for (const PrefixKey& k : report.orphans) drop.push_back(k);
  for (const RemovedRecord& r : report.pruned) drop.push_back(r.key);
  for (const PrefixKey& k : drop) s->Unlink(k, file_of.at(k));
  s->stats_.disk.records = s->index_.size();
  return s;
}

RecordJob DiskStore::JobFor(RecordJobKind kind, const PrefixKey& key) const {
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

void DiskStore::Unlink(const PrefixKey& key, uint64_t file_id) {
  Operation op;
  op.kind = Operation::Kind::kUnlink;
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
  StartOperation(std::move(op));
}

void DiskStore::Drop(const PrefixKey& key, uint64_t file_id) {
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

void DiskStore::Truncate(const std::optional<RowDrop>& drop) {
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
  Operation op;
  op.kind = Operation::Kind::kTruncate;
  op.key = drop->key;
  op.unsubmitted.push_back(JobFor(RecordJobKind::kTruncate, drop->key));
  f.has_row = false;
  const uint64_t row = f.bytes - RecordFileBytes(layout_, f.tail_pages, false, f.replicated_pages);
  f.bytes -= row;
  op.release_bytes = row;
  releasing_bytes_ += row;
  StartOperation(std::move(op));
}

void DiskStore::ApplyRemoved(const std::vector<RemovedRecord>& removed) {
  for (const RemovedRecord& r : removed) Drop(r.key, r.location.value);
}

bool DiskStore::MakeRoom(uint64_t bytes) {
  while (used_bytes_ - releasing_bytes_ + bytes > options_.disk_limit_bytes) {
    EvictionDecision d =
        index_.EvictOne([](const IndexEntry& e) { return e.state == TransferState::kReady; });
    if (d.empty()) return false;
    stats_.disk.evicted_total += d.removed.size();
    ApplyRemoved(d.removed);
    if (d.compacted) {
      ++stats_.disk.compacted_total;
      Truncate(d.compacted);
    }
  }
  return used_bytes_ + bytes <= options_.disk_limit_bytes;
}

StoreOutcome DiskStore::Count(StoreOutcome o) { return CountOutcome(stats_, o); }

std::optional<HostHit> DiskStore::Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                         uint64_t before) {
  ++stats_.lookups;
  std::optional<HostHit> h = LookupIn(history, resident_tokens, before, {TransferState::kReady});
  if (!h) return std::nullopt;
  CountHit(stats_, *h);
  return h;
}

StoreOutcome DiskStore::Store(const PublishedCheckpoint& cp) {
  if (closed_ || !transport_->stopped().ok()) return Count(StoreOutcome::kDisabled);
  if (index_.Contains(cp.key)) return Count(StoreOutcome::kPresent);
  if (orphaned_names_.count(cp.key) != 0) return Count(StoreOutcome::kRetry);
  const uint64_t pt = geometry_.page_tokens;
  const uint64_t chain_pages = cp.key.consumed / pt;
  STRATA_ASSERT(cp.chain.size() == chain_pages,
                "published chain must hold every page from the root");
  const bool parent_held = cp.parent && index_.Contains(*cp.parent);
  if (parent_held) (void)index_.Pin(*cp.parent);
  const uint64_t tail = parent_held ? chain_pages - cp.parent->consumed / pt : chain_pages;
  const uint64_t bytes = RecordFileBytes(layout_, tail, true);
  StoreOutcome outcome = StoreOutcome::kQueued;
  if (bytes > options_.disk_limit_bytes) {
    outcome = StoreOutcome::kOversize;
  } else if (!MakeRoom(bytes)) {
    outcome = StoreOutcome::kDeferred;
  }
  const std::optional<PrefixKey> parent = parent_held ? cp.parent : std::nullopt;
  if (outcome != StoreOutcome::kQueued) {
    if (parent_held) Unpin({*cp.parent});
    return Count(outcome);
  }
  const uint64_t file_id = next_file_++;
  Result<InsertResult> ins = index_.Insert({cp.key, parent, cp.bucket, NodeLocation(file_id),
                                            TransferState::kInFlight, RowPresence::kPresent},
                                           now_ms_);
  if (parent_held) Unpin({*cp.parent});
  STRATA_ASSERT(ins.ok() && ins->tail_page_count == tail, "index disagrees on the tail");
  (void)index_.Pin(cp.key);
  files_[file_id] = File{static_cast<uint32_t>(tail), true, false, false, bytes, false, true};
  RecordJob job = JobFor(RecordJobKind::kStore, cp.key);
  job.id = JobId(next_job_++);
  job.page_ids.assign(cp.chain.end() - static_cast<std::ptrdiff_t>(tail), cp.chain.end());
  job.row_slot = cp.row_slot;
  const JobId job_id = job.id;
  Status s = transport_->Submit(std::move(job));
  if (!s.ok()) {
    (void)index_.Remove(cp.key);
    files_.erase(file_id);
    if (s.code() == StatusCode::kBusy) return Count(StoreOutcome::kRetry);
    if (s.code() == StatusCode::kInvalidArgument) return Count(StoreOutcome::kOversize);
    return Count(StoreOutcome::kDisabled);
  }
  used_bytes_ += bytes;
  Operation op;
  op.kind = Operation::Kind::kStore;
  op.key = cp.key;
  op.file_id = file_id;
  op.checkpoint_id = cp.checkpoint_id;
  op.pinned = {cp.key};
  op.outstanding = 1;
  const uint64_t id = next_op_++;
  job_op_[job_id] = id;
  ops_.emplace(id, std::move(op));
  return Count(StoreOutcome::kQueued);
}

Status DiskStore::Fetch(const HostHit& hit, const InboundTicket& ticket) {
  if (closed_) return Status::Aborted("disk store is closed");
  STRATA_RETURN_IF_ERROR(transport_->stopped());
  if (ticket.page_ids.size() != hit.pages) {
    return Status::InvalidArgument("ticket has " + std::to_string(ticket.page_ids.size()) +
                                   " page ids for a restore of " + std::to_string(hit.pages));
  }
  Operation op;
  op.kind = Operation::Kind::kFetch;
  op.key = hit.endpoint;
  op.ticket = ticket.ticket;
  uint64_t chain_page = 0;  // global index of the record's first page in the chain
  size_t next_id = 0;
  for (size_t i = 0; i < hit.chain.size(); ++i) {
    const PrefixKey& k = hit.chain[i];
    std::optional<IndexEntry> e = index_.Find(k);
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
    RecordJob j = JobFor(RecordJobKind::kFetch, k);
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
  for (const PrefixKey& k : hit.chain) (void)index_.Pin(k);
  op.pinned = hit.chain;
  StartOperation(std::move(op));
  ++stats_.fetches;
  return Status::Ok();
}

void DiskStore::Unpin(const std::vector<PrefixKey>& keys) {
  for (const PrefixKey& k : keys) {
    Result<std::optional<RowDrop>> r = index_.Unpin(k);
    if (r.ok()) Truncate(*r);
  }
}

void DiskStore::Poll(uint64_t now_ms, std::vector<StoreEvent>& events) {
  now_ms_ = std::max(now_ms_, now_ms);
  Pump();
  Status stopped = transport_->stopped();
  if (!stopped.ok() && !stopped_reported_) {
    stopped_reported_ = true;
    events_.push_back({StoreEvent::Kind::kStopped, 0, {}, {}, stopped, 0});
  }
  if (options_.max_age_ms > 0 && stopped.ok() && !closed_) {
    // Parked records (a composite's, in host memory only) expire too.
    ExpirySweep sweep = index_.Expire(now_ms_, options_.max_age_ms, [](const IndexEntry& e) {
      return e.state == TransferState::kReady || e.state == TransferState::kParked;
    });
    stats_.disk.expired_total += sweep.expired_leaves;
    ApplyRemoved(sweep.removed);
  }
  for (StoreEvent& e : events_) events.push_back(std::move(e));
  events_.clear();
}

bool DiskStore::WaitIdle(std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  Pump();
  while (!ops_.empty() && transport_->stopped().ok() && std::chrono::steady_clock::now() < until) {
    (void)transport_->WaitForCompletion(std::chrono::milliseconds(10));
    Pump();
  }
  return ops_.empty();
}

void DiskStore::WaitForCompletion(std::chrono::milliseconds bound) {
  (void)transport_->WaitForCompletion(bound);
  Pump();
}

StoreStats DiskStore::Stats() const {
  StoreStats s = stats_;
  s.disk.records = index_.size();
  s.disk.bytes = used_bytes_;
  return s;
}

Status DiskStore::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto until = std::chrono::steady_clock::now() + options_.close_deadline;
  while (!ops_.empty() && transport_->stopped().ok() && std::chrono::steady_clock::now() < until) {
    (void)transport_->WaitForCompletion(std::chrono::milliseconds(20));
    Pump();
  }
  const auto left =
      std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 until - std::chrono::steady_clock::now()));
  Status s = transport_->Close(left);
  if (!s.ok()) {
    (void)transport_.release();  // copies may still run: keep everything alive
    return s;
  }
  if (!ops_.empty())
    return Status::Aborted(std::to_string(ops_.size()) + " disk jobs did not drain");
  return Status::Ok();
}

}  // namespace strata
