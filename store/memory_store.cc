#include "store/memory_store.h"

#include "store/store_accounting.h"

#include "store/replication.h"

namespace strata {

MemoryStore::MemoryStore(const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool,
                         std::unique_ptr<Transfers> transfers, MemoryStoreOptions options)
    : geometry_(geometry),
      layout_(geometry),
      pool_(std::move(pool)),
      transfers_(std::move(transfers)),
      tracker_(*transfers_),
      options_(options),
      index_(geometry.page_tokens),
      row_slots_(RowSlots(layout_.row_segment_bytes(), pool_->slot_bytes())) {
  STRATA_ASSERT(pool_->slot_bytes() >= layout_.page_record_bytes(),
                "slab slots must hold a page record");
  for (const RankGeometry& g : geometry.ranks) {
    page_bytes_all_ranks_ += g.page_bytes();
    row_bytes_all_ranks_ += g.row.unit_bytes;
  }
  stats_.slots_total = pool_->total_slots();
  stats_.intake_slots = pool_->intake_slots();
}

MemoryStore::~MemoryStore() {
  if (!closed_) (void)Close();
}

std::optional<HostHit> MemoryStore::Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                           uint64_t before) {
  ++stats_.lookups;
  std::optional<LookupHit> hit =
      index_.Lookup(history, resident_tokens, before, {TransferState::kReady});
  if (!hit) return std::nullopt;
  HostHit h = MakeHostHit(*hit, resident_tokens, page_bytes_all_ranks_, row_bytes_all_ranks_,
                          Tier::kMemory);
  CountHit(stats_, h);
  return h;
}

bool MemoryStore::AllocateWithEviction(uint64_t count, std::vector<SlotId>& out) {
  while (!pool_->Allocate(count, options_.keep_free_slots, out)) {
    EvictionDecision d =
        index_.EvictOne([](const IndexEntry& e) { return e.state == TransferState::kReady; });
    if (d.empty()) return false;
    ApplyEviction(d);
  }
  return true;
}

void MemoryStore::ApplyEviction(const EvictionDecision& d) {
  stats_.memory.evicted_total += d.removed.size();
  ApplyRemoved(d.removed);
  if (d.compacted) {
    ++stats_.memory.compacted_total;
    ApplyRowDrop(d.compacted);
  }
}

void MemoryStore::ApplyRemoved(const std::vector<RemovedRecord>& removed) {
  for (const RemovedRecord& r : removed) {
    auto it = records_.find(r.location.value);
    if (it == records_.end()) continue;
    it->second.removed = true;
    if (it->second.users == 0) ReleaseRecord(r.location.value);
  }
}

void MemoryStore::ApplyRowDrop(const std::optional<RowDrop>& drop) {
  if (!drop) return;
  auto it = records_.find(drop->location.value);
  if (it == records_.end()) return;
  // The index never drops the row of a pinned record, so no copy reads it.
  pool_->Free(it->second.row_slots);
  it->second.row_slots.clear();
}

void MemoryStore::ReleaseRecord(uint64_t id) {
  auto it = records_.find(id);
  pool_->Free(it->second.page_slots);
  pool_->Free(it->second.row_slots);
  stats_.memory.bytes -=
      std::min(stats_.memory.bytes, it->second.pages.size() * page_bytes_all_ranks_);
  records_.erase(it);
}

std::vector<HostPiece> MemoryStore::RowPieces(const Record& r) const {
  std::vector<HostPiece> pieces;
  for (SlotId s : r.row_slots) pieces.push_back({pool_->address(s), pool_->slot_bytes()});
  return pieces;
}

StoreOutcome MemoryStore::Store(const PublishedCheckpoint& cp) {
  auto count = [&](StoreOutcome o) { return CountOutcome(stats_, o); };
  if (closed_) return count(StoreOutcome::kDisabled);
  if (index_.Contains(cp.key)) return count(StoreOutcome::kPresent);
  const uint64_t pt = geometry_.page_tokens;
  const uint64_t chain_pages = cp.key.consumed / pt;
  STRATA_ASSERT(cp.chain.size() == chain_pages,
                "published chain must hold every page from the root");
  // Keep the parent from being evicted to make room for its own child.
  const bool parent_held = cp.parent && index_.Contains(*cp.parent);
  if (parent_held) (void)index_.Pin(*cp.parent);
  const uint64_t tail = parent_held ? chain_pages - cp.parent->consumed / pt : chain_pages;
  const uint64_t need = SlotsFor(tail);
  std::vector<SlotId> slots;
  StoreOutcome outcome = StoreOutcome::kQueued;
  if (need + options_.keep_free_slots > pool_->total_slots()) {
    outcome = StoreOutcome::kOversize;
  } else if (!AllocateWithEviction(need, slots)) {
    outcome = StoreOutcome::kDeferred;
  }
  if (outcome != StoreOutcome::kQueued) {
    if (parent_held) Unpin({*cp.parent});
    return count(outcome);
  }
  const uint64_t id = next_record_++;
  Record rec;
  rec.page_slots.assign(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(tail));
  rec.row_slots.assign(slots.begin() + static_cast<std::ptrdiff_t>(tail), slots.end());
  for (SlotId s : rec.page_slots) rec.pages.push_back(pool_->address(s));
  Result<InsertResult> ins =
      index_.Insert({cp.key, parent_held ? cp.parent : std::nullopt, cp.bucket, NodeLocation(id),
                     TransferState::kInFlight, RowPresence::kPresent},
                    now_ms_);
  if (parent_held) Unpin({*cp.parent});
  STRATA_ASSERT(ins.ok() && ins->tail_page_count == tail, "index disagrees on the tail");
  (void)index_.Pin(cp.key);
  std::vector<HostPageSource> sources;
  for (uint8_t* p : rec.pages) sources.push_back({p, false});
  std::vector<PageId> ids(cp.chain.end() - static_cast<std::ptrdiff_t>(tail), cp.chain.end());
  std::vector<TransferJob> jobs = PlanTransfers(TransferDirection::kDeviceToHost, sources, ids,
                                                HostRowSource{RowPieces(rec), false}, cp.row_slot);
  const uint64_t op = next_op_++;
  rec.users = 1;
  records_.emplace(id, std::move(rec));
  if (Status s = tracker_.Start(op, std::move(jobs)); !s.ok()) {
    (void)index_.Remove(cp.key);  // an in-flight leaf: nothing else goes with it
    records_.at(id).removed = true;
    records_.at(id).users = 0;
    ReleaseRecord(id);
    return count(s.code() == StatusCode::kBusy ? StoreOutcome::kRetry : StoreOutcome::kDeferred);
  }
  ops_[op] = Operation{Operation::Kind::kCopyOut, cp.key, cp.checkpoint_id, {}, {cp.key}, {id}};
  return count(StoreOutcome::kQueued);
}

Status MemoryStore::Fetch(const HostHit& hit, const InboundTicket& ticket) {
  if (closed_) return Status::Aborted("memory store is closed");
  if (ticket.page_ids.size() != hit.pages) {
    return Status::InvalidArgument("ticket has " + std::to_string(ticket.page_ids.size()) +
                                   " page ids for a restore of " + std::to_string(hit.pages));
  }
  std::vector<HostPageSource> sources;
  std::vector<uint64_t> ids;
  for (const PrefixKey& k : hit.chain) {
    std::optional<IndexEntry> e = index_.Find(k);
    if (!e || e->state != TransferState::kReady) {
      return Status::NotFound("record " + k.ToFileStem() + " left memory since the lookup");
    }
    const Record& r = records_.at(e->location.value);
    for (uint8_t* p : r.pages) sources.push_back({p, r.replicated_pages});
    ids.push_back(e->location.value);
  }
  const Record& end = records_.at(ids.back());
  if (end.row_slots.empty()) {
    return Status::NotFound("record " + hit.endpoint.ToFileStem() + " lost its row");
  }
  if (sources.size() != hit.skip_pages + hit.pages) {
    return Status::FailedPrecondition("chain of " + hit.endpoint.ToFileStem() +
                                      " changed since the lookup");
  }
  sources.erase(sources.begin(), sources.begin() + static_cast<std::ptrdiff_t>(hit.skip_pages));
  std::vector<TransferJob> jobs =
      PlanTransfers(TransferDirection::kHostToDevice, sources, ticket.page_ids,
                    HostRowSource{RowPieces(end), end.replicated_row}, ticket.row_slot);
  const uint64_t op = next_op_++;
  STRATA_RETURN_IF_ERROR(tracker_.Start(op, std::move(jobs)));
  for (const PrefixKey& k : hit.chain) (void)index_.Pin(k);
  for (uint64_t id : ids) ++records_.at(id).users;
  ops_[op] = Operation{Operation::Kind::kRestore, hit.endpoint, 0, ticket.ticket, hit.chain, ids};
  ++stats_.fetches;
  return Status::Ok();
}

void MemoryStore::Unpin(const std::vector<PrefixKey>& keys) {
  for (const PrefixKey& k : keys) {
    Result<std::optional<RowDrop>> r = index_.Unpin(k);
    if (r.ok()) ApplyRowDrop(*r);
  }
}

void MemoryStore::Pack(Record& r) {
  if (layout_.rank_count() < 2) return;
  bool packed = false;
  if (layout_.pages_can_replicate() && !r.pages.empty()) {
    bool same = true;
    for (uint8_t* p : r.pages) same = same && PageRanksIdentical(layout_, p);
    if (same) {
      r.pages = PackPageShares(layout_, r.pages);
      const size_t keep = (r.pages.size() + layout_.rank_count() - 1) / layout_.rank_count();
      for (size_t i = keep; i < r.page_slots.size(); ++i) pool_->Free(r.page_slots[i]);
      r.page_slots.resize(keep);
      r.replicated_pages = packed = true;
    }
  }
  if (!r.row_slots.empty() && RowRanksIdentical(layout_, RowPieces(r))) {
    const uint64_t keep = RowSlots(layout_.replicated_row_segment_bytes(), pool_->slot_bytes());
    for (size_t i = keep; i < r.row_slots.size(); ++i) pool_->Free(r.row_slots[i]);
    r.row_slots.resize(keep);
    r.replicated_row = packed = true;
  }
  ++(packed ? stats_.memory.packed_total : stats_.memory.per_rank_total);
}

void MemoryStore::FinishCopyOut(const Operation& op, const FinishedOperation& f) {
  Record& rec = records_.at(op.records[0]);
  --rec.users;
  if (rec.removed) {  // evicted with an ancestor's failure while copying
    if (rec.users == 0) ReleaseRecord(op.records[0]);
    events_.push_back({StoreEvent::Kind::kStoreFailed,
                       op.checkpoint_id,
                       {},
                       op.key,
                       Status::Aborted("record removed while copying"),
                       0});
    ++stats_.store_failed;
    return;
  }
  if (!f.status.ok()) {
    Result<std::vector<RemovedRecord>> removed = index_.Remove(op.key);
    if (removed.ok()) ApplyRemoved(*removed);
    events_.push_back({StoreEvent::Kind::kStoreFailed, op.checkpoint_id, {}, op.key, f.status, 0});
    ++stats_.store_failed;
    return;
  }
  if (options_.pack_replicated) Pack(rec);
  Result<std::optional<RowDrop>> committed = index_.SetState(op.key, TransferState::kReady);
  if (committed.ok()) ApplyRowDrop(*committed);
  Unpin({op.key});
  ++stats_.memory.stored_total;
  stats_.memory.bytes_in_total += f.bytes;
  stats_.memory.bytes += rec.pages.size() * page_bytes_all_ranks_;
  events_.push_back(
      {StoreEvent::Kind::kStored, op.checkpoint_id, {}, op.key, Status::Ok(), f.bytes});
}

void MemoryStore::FinishRestore(const Operation& op, const FinishedOperation& f) {
  Unpin(op.pinned);
  for (uint64_t id : op.records) {
    Record& r = records_.at(id);
    if (--r.users == 0 && r.removed) ReleaseRecord(id);
  }
  if (f.status.ok()) {
    (void)index_.Touch(op.key, now_ms_);
    stats_.memory.bytes_out_total += f.bytes;
    events_.push_back({StoreEvent::Kind::kFetched, 0, op.ticket, op.key, Status::Ok(), f.bytes});
  } else {
    ++stats_.fetch_failed;
    events_.push_back({StoreEvent::Kind::kFetchFailed, 0, op.ticket, op.key, f.status, 0});
  }
}

void MemoryStore::Poll(uint64_t now_ms, std::vector<StoreEvent>& events) {
  now_ms_ = std::max(now_ms_, now_ms);
  finished_.clear();
  tracker_.Pump(finished_);
  for (const FinishedOperation& f : finished_) {
    auto it = ops_.find(f.op);
    Operation op = std::move(it->second);
    ops_.erase(it);
    if (op.kind == Operation::Kind::kCopyOut) {
      FinishCopyOut(op, f);
    } else {
      FinishRestore(op, f);
    }
  }
  if (options_.max_age_ms > 0) {
    ExpirySweep sweep = index_.Expire(now_ms_, options_.max_age_ms, [](const IndexEntry& e) {
      return e.state == TransferState::kReady;
    });
    stats_.memory.expired_total += sweep.expired_leaves;
    ApplyRemoved(sweep.removed);
  }
  for (StoreEvent& e : events_) events.push_back(std::move(e));
  events_.clear();
}

StoreStats MemoryStore::Stats() const {
  StoreStats s = stats_;
  s.slots_in_use = pool_->used_slots();
  s.slots_total = pool_->total_slots();
  s.intake_slots = pool_->intake_slots();
  s.memory.records = index_.size();
  return s;
}

Status MemoryStore::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto deadline = std::chrono::steady_clock::now() + options_.close_deadline;
  std::vector<StoreEvent> dropped;
  while (tracker_.active() > 0 && std::chrono::steady_clock::now() < deadline) {
    transfers_->WaitForCompletion(std::chrono::milliseconds(50));
    Poll(now_ms_, dropped);
  }
  // Events of work that finished while closing stay available to Poll.
  events_ = std::move(dropped);
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  Status s = transfers_->Close(std::max(left, std::chrono::milliseconds(1)));
  if (!s.ok() || tracker_.active() > 0) {
    pool_->Leak();         // copies may still write into it
    transfers_.release();  // NOLINT(bugprone-unused-return-value): threads may still run
    return s.ok() ? Status::Aborted("memory store copies did not drain") : s;
  }
  return Status::Ok();
}

}  // namespace strata
