#include "store/tier/memory_store.h"

#include "store/base/deliberate_leak.h"
#include "store/tier/store_accounting.h"

namespace strata {

MemoryStore::MemoryStore(const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool,
                         std::unique_ptr<Transfers> transfers, MemoryStoreOptions options)
    : geometry_(geometry),
      pool_(std::move(pool)),
      records_(geometry, pool_),
      transfers_(std::move(transfers)),
      tracker_(*transfers_),
      options_(std::move(options)),
      index_(geometry.page_tokens) {
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
  OfferEvicted(d.removed);
  ApplyRemoved(d.removed);
  if (d.compacted) {
    ++stats_.memory.compacted_total;
    ApplyRowDrop(d.compacted);
  }
}

void MemoryStore::ApplyRemoved(const std::vector<RemovedRecord>& removed) {
  for (const RemovedRecord& r : removed) {
    lineage_.erase(r.key);
    demotions_.erase(r.key);
    if (records_.contains(r.location.value)) records_.Remove(r.location.value);
  }
}

void MemoryStore::ApplyRowDrop(const std::optional<RowDrop>& drop) {
  // The index never drops the row of a pinned record, so no copy reads it.
  if (drop && records_.contains(drop->location.value)) records_.DropRow(drop->location.value);
}

StoreOutcome MemoryStore::Store(const PublishedCheckpoint& cp) {
  return retries_.Note(cp.key, [&](RetryCause& cause) { return Offer(cp, cause); });
}

void MemoryStore::Evicted(std::span<const EvictionNotice> notices) {
  retries_.Evicted(notices, stats_.retry_abandoned);
}

StoreOutcome MemoryStore::Offer(const PublishedCheckpoint& cp, RetryCause& cause) {
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
    cause = RetryCause::kSlabs;
  }
  if (outcome != StoreOutcome::kQueued) {
    if (parent_held) Unpin({*cp.parent});
    return count(outcome);
  }
  const uint64_t id = records_.Add(std::move(slots), {tail});
  Result<InsertResult> ins =
      index_.Insert({cp.key, parent_held ? cp.parent : std::nullopt, cp.bucket, NodeLocation(id),
                     TransferState::kInFlight, RowPresence::kPresent},
                    now_ms_);
  if (parent_held) Unpin({*cp.parent});
  STRATA_ASSERT(ins.ok() && ins->tail_page_count == tail, "index disagrees on the tail");
  lineage_[cp.key] = {parent_held ? cp.parent : std::nullopt, cp.bucket};
  (void)index_.Pin(cp.key);
  std::vector<PageId> ids(cp.chain.end() - static_cast<std::ptrdiff_t>(tail), cp.chain.end());
  const uint64_t op = next_op_++;
  if (Status s = tracker_.Start(op, records_.PlanCopyOut(id, ids, cp.row_slot)); !s.ok()) {
    (void)index_.Remove(cp.key);  // an in-flight leaf: nothing else goes with it
    lineage_.erase(cp.key);
    records_.Remove(id);
    records_.Release(id);
    cause = RetryCause::kQueue;
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
  std::vector<uint64_t> ids;
  for (const PrefixKey& k : hit.chain) {
    std::optional<IndexEntry> e = index_.Find(k);
    if (!e || e->state != TransferState::kReady) {
      return Status::NotFound("record " + k.ToFileStem() + " left memory since the lookup");
    }
    ids.push_back(e->location.value);
  }
  Result<std::vector<TransferJob>> jobs = records_.PlanRestore(ids, hit.skip_pages, ticket);
  if (!jobs.ok()) return jobs.status().WithContext("restore of " + hit.endpoint.ToFileStem());
  const uint64_t op = next_op_++;
  STRATA_RETURN_IF_ERROR(tracker_.Start(op, std::move(*jobs)));
  for (const PrefixKey& k : hit.chain) (void)index_.Pin(k);
  for (uint64_t id : ids) records_.Use(id);
  ops_[op] = Operation{Operation::Kind::kRestore, hit.endpoint, 0, ticket.ticket, hit.chain, ids};
  ++stats_.fetches;
  return Status::Ok();
}

void MemoryStore::Unpin(const std::vector<PrefixKey>& keys) {
  UnpinEach(index_, keys, [this](const std::optional<RowDrop>& drop) { ApplyRowDrop(drop); });
}

void MemoryStore::FinishCopyOut(const Operation& op, const FinishedOperation& f) {
  const uint64_t id = op.records[0];
  const bool removed = records_.at(id).removed;
  records_.Release(id);
  if (removed) {  // evicted with an ancestor's failure while copying
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
  const bool packed = options_.pack_replicated && records_.Pack(id);
  ++(packed ? stats_.memory.packed_total : stats_.memory.per_rank_total);
  Result<std::optional<RowDrop>> committed = index_.SetState(op.key, TransferState::kReady);
  if (committed.ok()) ApplyRowDrop(*committed);
  Unpin({op.key});
  ++stats_.memory.stored_total;
  stats_.memory.bytes_in_total += f.bytes;
  events_.push_back(
      {StoreEvent::Kind::kStored, op.checkpoint_id, {}, op.key, Status::Ok(), f.bytes});
}

void MemoryStore::FinishRestore(const Operation& op, const FinishedOperation& f) {
  Unpin(op.pinned);
  for (uint64_t id : op.records) records_.Release(id);
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
  Demote();
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
  s.memory.bytes = records_.held_bytes();
  return s;
}

Status MemoryStore::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto deadline = options_.clock.steady() + options_.close_deadline;
  std::vector<StoreEvent> dropped;
  while (tracker_.active() > 0 && options_.clock.steady() < deadline) {
    transfers_->WaitForCompletion(std::chrono::milliseconds(50));
    Poll(now_ms_, dropped);
  }
  // Events of work that finished while closing stay available to Poll.
  events_ = std::move(dropped);
  Status s = transfers_->Close(options_.clock.LeftUntil(deadline));
  if (!s.ok() || tracker_.active() > 0) {
    pool_->Leak();                         // copies may still write into it
    LeakOnPurpose(std::move(transfers_));  // threads may still run
    return s.ok() ? Status::Aborted("memory store copies did not drain") : s;
  }
  return Status::Ok();
}

}  // namespace strata
