#include "store/tier/composite/composite_store.h"

#include "store/tier/store_accounting.h"

namespace strata {

namespace {

TransferState DiskStateOf(uint8_t residence) {
  constexpr TransferState kStates[] = {TransferState::kInFlight, TransferState::kParked,
                                       TransferState::kSpilling, TransferState::kReady,
                                       TransferState::kReady,    TransferState::kReady};
  return kStates[residence];
}

}  // namespace

CompositeStore::CompositeStore(const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool,
                               std::unique_ptr<Transfers> memory_transfers,
                               CompositeStoreOptions options)
    : geometry_(geometry),
      pool_(std::move(pool)),
      records_(geometry, pool_),
      transfers_(std::move(memory_transfers)),
      tracker_(*transfers_),
      options_(std::move(options)),
      policy_({.retry_ms = options_.spill_retry_ms}) {
  for (const RankGeometry& g : geometry.ranks) {
    page_bytes_all_ranks_ += g.page_bytes();
    row_bytes_all_ranks_ += g.row.unit_bytes;
  }
}

Result<std::unique_ptr<CompositeStore>> CompositeStore::Open(
    const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool,
    std::unique_ptr<Transfers> memory_transfers, std::unique_ptr<DiskTransport> transport,
    const std::vector<ScannedRecord>& records, const CompositeStoreOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  if (pool->slot_bytes() < RecordLayout(geometry).page_record_bytes()) {
    return Status::InvalidArgument("slab slots are smaller than a page record");
  }
  std::unique_ptr<CompositeStore> s(
      new CompositeStore(geometry, std::move(pool), std::move(memory_transfers), options));
  DiskStoreOptions d;
  d.disk_limit_bytes = options.disk_limit_bytes;
  d.max_age_ms = options.max_age_ms;
  d.close_deadline = options.close_deadline;
  d.latencies = options.latencies;
  d.clock = options.clock;
  d.free_bytes = options.free_bytes;
  STRATA_ASSIGN_OR_RETURN(s->disk_, DiskStore::Open(geometry, std::move(transport), records, d));
  s->held_ = std::make_unique<HeldRecords>(s->disk_->files());
  s->held_->SetListener(s.get());
  s->stats_.slots_total = s->pool_->total_slots();
  s->stats_.intake_slots = s->pool_->intake_slots();
  return s;
}

CompositeStore::~CompositeStore() {
  if (!closed_) (void)Close();
  if (held_) held_->SetListener(nullptr);
}

bool CompositeStore::durable(const PrefixKey& key) const {
  auto it = residents_.find(key);
  return it != residents_.end() && it->second.state == Residence::kDurable;
}

bool CompositeStore::idle() const {
  return copy_outs_.empty() && fetches_.empty() && reads_.empty() && spills_.empty() &&
         disk_->idle();
}

// ---- Memory tier bookkeeping ----

void CompositeStore::Account(const Resident& r, int64_t sign) {
  const uint64_t n = records_.at(r.record).slots();
  uint64_t& slot = slots_in_[static_cast<size_t>(r.state)];
  slot = sign > 0 ? slot + n : slot - n;
}

CompositeStore::Resident& CompositeStore::AddResident(const PrefixKey& key, uint64_t record,
                                                      Residence state) {
  Resident& r = residents_[key];
  r.record = record;
  r.state = state;
  r.tick = ++next_tick_;
  lru_[r.tick] = key;
  Account(r, +1);
  return r;
}

void CompositeStore::SetResidence(Resident& r, Residence state) {
  Account(r, -1);
  r.state = state;
  Account(r, +1);
}

void CompositeStore::TouchResident(Resident& r) {
  auto node = lru_.extract(r.tick);
  r.tick = ++next_tick_;
  node.key() = r.tick;
  lru_.insert(std::move(node));
}

void CompositeStore::EraseResident(const PrefixKey& key) {
  auto it = residents_.find(key);
  if (it == residents_.end()) return;
  Account(it->second, -1);
  lru_.erase(it->second.tick);
  records_.Remove(it->second.record);
  residents_.erase(it);
}

void CompositeStore::OnRecordRemoved(const PrefixKey& key) { EraseResident(key); }

void CompositeStore::OnRowDropped(const PrefixKey& key) {
  auto it = residents_.find(key);
  if (it == residents_.end() || !records_.at(it->second.record).has_row()) return;
  Account(it->second, -1);
  records_.DropRow(it->second.record);
  Account(it->second, +1);
}

bool CompositeStore::ReserveWarm(uint64_t count, std::vector<SlotId>& out) {
  const uint64_t intake = pool_->intake_slots();
  return MakeFree(count + intake) && pool_->Allocate(count, intake, out);
}

bool CompositeStore::MakeFree(uint64_t slots) {
  const uint64_t free = pool_->free_slots();
  if (free >= slots) return true;
  // Evict only when the coldest clean, unused residents make enough room.
  const uint64_t short_by = slots - free;
  std::vector<PrefixKey> victims;
  uint64_t found = 0;
  for (auto it = lru_.begin(); it != lru_.end() && found < short_by; ++it) {
    const Resident& r = residents_.at(it->second);
    if (r.state != Residence::kDurable || records_.at(r.record).users != 0) continue;
    victims.push_back(it->second);
    found += records_.at(r.record).slots();
  }
  if (found < short_by) return false;
  for (const PrefixKey& k : victims) {
    EraseResident(k);
    ++stats_.memory.evicted_total;
  }
  return true;
}

uint64_t CompositeStore::SlotsToRead(const PrefixKey& key) const {
  if (residents_.count(key) != 0) return 0;
  std::optional<FileShape> shape = held_->ShapeOf(key);
  if (!shape) return 0;
  return records_.SlotsFor(
      {shape->tail_pages, shape->has_row, shape->replicated_pages, shape->replicated_row});
}

StoreOutcome CompositeStore::Count(StoreOutcome o) { return CountOutcome(stats_, o); }

// ---- HostStore ----

std::optional<HostHit> CompositeStore::Lookup(const PrefixHistory& history,
                                              uint64_t resident_tokens, uint64_t before) {
  ++stats_.lookups;
  if (closed_) return std::nullopt;
  std::optional<HostHit> hit =
      held_->LookupIn(history, resident_tokens, before,
                      {TransferState::kParked, TransferState::kSpilling, TransferState::kReady});
  if (!hit) return std::nullopt;
  uint64_t to_read = 0;
  bool all_resident = true;
  for (const PrefixKey& k : hit->chain) {
    to_read += SlotsToRead(k);
    auto r = residents_.find(k);
    all_resident = all_resident && r != residents_.end() && r->second.usable();
  }
  hit->tier = all_resident ? Tier::kMemory : Tier::kDisk;
  const uint64_t room = pool_->free_slots() + slots_in_[static_cast<size_t>(Residence::kDurable)];
  if (to_read > 0 && to_read + pool_->intake_slots() > room) {
    // Memory cannot hold the chain: a complete disk chain streams instead.
    hit = held_->LookupIn(history, resident_tokens, before, {TransferState::kReady});
    if (!hit) return std::nullopt;
  }
  CountHit(stats_, *hit);
  return hit;
}

StoreOutcome CompositeStore::Store(const PublishedCheckpoint& cp) {
  return retries_.Note(cp.key, [&](RetryCause& cause) { return Offer(cp, cause); });
}

void CompositeStore::Evicted(std::span<const EvictionNotice> notices) {
  retries_.Evicted(notices, stats_.retry_abandoned);
}

StoreOutcome CompositeStore::Offer(const PublishedCheckpoint& cp, RetryCause& cause) {
  if (closed_) return Count(StoreOutcome::kDisabled);
  if (disk_->index().Contains(cp.key)) {
    return Count(options_.direct ? Warm(cp) : StoreOutcome::kPresent);
  }
  const uint64_t pt = geometry_.page_tokens;
  const uint64_t chain_pages = cp.key.consumed / pt;
  STRATA_ASSERT(cp.chain.size() == chain_pages,
                "published chain must hold every page from the root");
  const bool parent_held = cp.parent && disk_->index().Contains(*cp.parent);
  const uint64_t tail = chain_pages - (parent_held ? cp.parent->consumed / pt : 0);
  const uint64_t need = records_.SlotsFor({tail});
  std::vector<SlotId> slots;
  const bool fits_disk =
      RecordFileBytes(records_.layout(), {.tail_pages = static_cast<uint32_t>(tail)}) <=
      disk_->configured_limit_bytes();
  if (!fits_disk || need + pool_->intake_slots() > pool_->total_slots() ||
      !ReserveWarm(need, slots)) {
    // Memory cannot hold it: stream it to disk through staging, unretained,
    // once clean residents made room for the staging.
    if (need <= pool_->total_slots() && !MakeFree(need)) {
      cause = RetryCause::kSlabs;
      return Count(StoreOutcome::kDeferred);
    }
    return Count(disk_->Offer(cp, cause));
  }
  Result<uint32_t> indexed = held_->InsertHeld(cp);
  if (!indexed.ok()) {
    pool_->Free(slots);
    cause = RetryCause::kInflight;
    return Count(indexed.status().code() == StatusCode::kBusy ? StoreOutcome::kRetry
                                                              : StoreOutcome::kDisabled);
  }
  STRATA_ASSERT(*indexed == tail, "disk index disagrees on the tail");
  (void)held_->Pin(cp.key);
  const uint64_t record = records_.Add(std::move(slots), {tail});
  std::vector<PageId> ids(cp.chain.end() - static_cast<std::ptrdiff_t>(tail), cp.chain.end());
  const uint64_t op = next_op_++;
  if (Status s = tracker_.Start(op, records_.PlanCopyOut(record, ids, cp.row_slot)); !s.ok()) {
    held_->DropHeld(cp.key);
    records_.Remove(record);
    records_.Release(record);
    cause = RetryCause::kQueue;
    return Count(s.code() == StatusCode::kBusy ? StoreOutcome::kRetry : StoreOutcome::kDeferred);
  }
  AddResident(cp.key, record, Residence::kCopying);
  CopyOut& copy = copy_outs_[op] = CopyOut{cp.key, cp.checkpoint_id, record};
  // A transport that stages device jobs (a stand-in for the direct one)
  // takes the write's staging from the slots ReserveWarm left free.
  const bool write_fits = !disk_->files().device_jobs_stage() || need <= pool_->intake_slots();
  if (options_.direct && write_fits) {
    // Fan out: the file from the GPU pages beside the memory copy. Refused
    // (no room under the disk limit), the record spills from memory later.
    const uint64_t tag = next_op_++;
    if (held_->WriteFromDevice(cp.key, std::move(ids), cp.row_slot, tag).ok()) {
      spills_[tag] = Spill{.key = cp.key, .record = record, .from_device = true};
      copy.write = tag;
      ++stats_.fanout_writes;
    }
  }
  return Count(StoreOutcome::kQueued);
}

StoreOutcome CompositeStore::Warm(const PublishedCheckpoint& cp) {
  if (residents_.count(cp.key) != 0) return StoreOutcome::kPresent;
  const std::optional<IndexEntry> e = disk_->index().Find(cp.key);
  // Only a committed file with its row (the GPU holds the endpoint's row, so
  // the copy is made with it, as the file has it) whose tail the published
  // chain covers.
  if (!e || e->state != TransferState::kReady || e->row != RowPresence::kPresent ||
      e->tail_page_count > cp.chain.size()) {
    return StoreOutcome::kPresent;
  }
  // Only when it completes a chain memory holds: an ancestor missing from
  // memory (its row is not on the GPU to copy) keeps the chain restoring
  // from its files, and a warmed endpoint alone would take room for nothing.
  for (std::optional<PrefixKey> p = e->parent; p;) {
    auto r = residents_.find(*p);
    if (r == residents_.end() || !r->second.usable()) return StoreOutcome::kPresent;
    const std::optional<IndexEntry> up = disk_->index().Find(*p);
    p = up ? up->parent : std::nullopt;
  }
  const uint64_t tail = e->tail_page_count;
  const uint64_t need = records_.SlotsFor({tail});
  std::vector<SlotId> slots;
  if (need + pool_->intake_slots() > pool_->total_slots() || !ReserveWarm(need, slots)) {
    return StoreOutcome::kPresent;  // memory has no clean room: the file serves it
  }
  const uint64_t record = records_.Add(std::move(slots), {tail});
  std::vector<PageId> ids(cp.chain.end() - static_cast<std::ptrdiff_t>(tail), cp.chain.end());
  const uint64_t op = next_op_++;
  if (Status s = tracker_.Start(op, records_.PlanCopyOut(record, ids, cp.row_slot)); !s.ok()) {
    records_.Remove(record);
    records_.Release(record);
    return StoreOutcome::kPresent;
  }
  (void)held_->Pin(cp.key);  // the file (and its row) stays while memory copies it in
  AddResident(cp.key, record, Residence::kWarming);
  copy_outs_[op] = CopyOut{cp.key, cp.checkpoint_id, record};
  return StoreOutcome::kQueued;
}

void CompositeStore::FinishCopyOut(const CopyOut& c, const FinishedOperation& f) {
  auto it = residents_.find(c.key);
  const bool mine = it != residents_.end() && it->second.record == c.record;
  // Its file is committed (Warm's copy-in, or a fan-out write that finished
  // first, whether or not FinishSpill ran yet): the index says so.
  const std::optional<IndexEntry> e = disk_->index().Find(c.key);
  const bool file_kept = mine && e && e->state == TransferState::kReady;
  Status status = f.status;
  if (!mine) status = Status::Aborted("record removed while copying");
  if (mine && !status.ok()) {
    if (file_kept) {
      EraseResident(c.key);  // the file stays the record's one copy
      held_->Unpin({c.key});
    } else {
      held_->DropHeld(c.key);  // removes the memory copy too
    }
  }
  if (!status.ok()) {
    records_.Release(c.record);
    if (file_kept) {
      // Stored all the same: the file holds the record.
      EmitAfterWrite(c, {StoreEvent::Kind::kStored, c.checkpoint_id, {}, c.key, Status::Ok(), 0});
      return;
    }
    ++stats_.store_failed;
    EmitAfterWrite(c, {StoreEvent::Kind::kStoreFailed, c.checkpoint_id, {}, c.key, status, 0});
    return;
  }
  Resident& r = it->second;
  const bool writing = c.write != 0 && spills_.count(c.write) != 0;
  Account(r, -1);
  const bool packed = options_.pack_replicated && records_.Pack(c.record);
  r.state = file_kept ? Residence::kDurable : writing ? Residence::kSpilling : Residence::kParked;
  Account(r, +1);
  ++(packed ? stats_.memory.packed_total : stats_.memory.per_rank_total);
  ++stats_.memory.stored_total;
  stats_.memory.bytes_in_total += f.bytes;
  if (!file_kept) (void)held_->MarkCopied(c.key);
  records_.Release(c.record);
  held_->Unpin({c.key});  // may drop the row the index deferred
  EmitAfterWrite(c, {StoreEvent::Kind::kStored, c.checkpoint_id, {}, c.key, Status::Ok(), f.bytes});
}

void CompositeStore::EmitAfterWrite(const CopyOut& c, StoreEvent event) {
  auto w = c.write != 0 ? spills_.find(c.write) : spills_.end();
  if (w != spills_.end()) {
    w->second.event = std::move(event);
  } else {
    events_.push_back(std::move(event));
  }
}

void CompositeStore::OnHostDone(const HostJobDone& d) {
  switch (d.kind) {
    case HostJobDone::Kind::kSpill: FinishSpill(d); break;
    case HostJobDone::Kind::kReadInto: FinishRead(d); break;
  }
}

void CompositeStore::PollOnce() {
  finished_.clear();
  tracker_.Pump(finished_);
  for (const FinishedOperation& f : finished_) {
    if (auto c = copy_outs_.find(f.op); c != copy_outs_.end()) {
      const CopyOut done = c->second;
      copy_outs_.erase(c);
      FinishCopyOut(done, f);
    } else {
      FinishFetch(f.op, f.status, f.bytes);
    }
  }
  disk_events_.clear();
  disk_->Poll(now_ms_, disk_events_);
  for (StoreEvent& e : disk_events_) events_.push_back(std::move(e));
  held_->TakeHostDone(host_done_);
  std::vector<HostJobDone> done = std::move(host_done_);
  host_done_.clear();
  for (const HostJobDone& d : done) OnHostDone(d);
  std::vector<uint64_t> stalled;  // uploads refused by full transfer queues
  for (const auto& [id, f] : fetches_) {
    if (f.reads_left == 0 && !f.uploading && f.failed.ok()) stalled.push_back(id);
  }
  for (uint64_t id : stalled) StartUpload(id);
}

void CompositeStore::Poll(uint64_t now_ms, std::vector<StoreEvent>& events) {
  now_ms_ = std::max(now_ms_, now_ms);
  if (!closed_) {  // after Close, only the events of work that finished while closing
    PollOnce();
    Maintain();
  }
  for (StoreEvent& e : events_) events.push_back(std::move(e));
  events_.clear();
}

bool CompositeStore::WaitIdle(uint64_t now_ms, std::chrono::milliseconds bound) {
  now_ms_ = std::max(now_ms_, now_ms);
  const auto until = options_.clock.steady() + bound;
  if (closed_) return idle();
  PollOnce();
  Maintain();
  while (!idle() && options_.clock.steady() < until) {
    if (!transfers_->WaitForCompletion(std::chrono::milliseconds(1))) {
      disk_->WaitForCompletion(std::chrono::milliseconds(1));
    }
    PollOnce();
    Maintain();
  }
  return idle();
}

StoreStats CompositeStore::Stats() const {
  StoreStats s = stats_;
  const StoreStats d = disk_->Stats();
  s.disk = d.disk;
  s.store_failed += d.store_failed;  // streamed stores
  s.fetch_failed += d.fetch_failed;  // streamed fetches
  s.fetch_checksum_failures += d.fetch_checksum_failures;
  s.fs_full_retries = d.fs_full_retries;
  s.disk_limit_bytes = d.disk_limit_bytes;
  s.disk_limit_lowered_total = d.disk_limit_lowered_total;
  s.slots_in_use = pool_->used_slots();
  s.slots_total = pool_->total_slots();
  s.intake_slots = pool_->intake_slots();
  s.memory.records = residents_.size();
  s.memory.bytes = records_.held_bytes();
  for (const auto& [key, r] : residents_) {
    s.parked_records += r.state == Residence::kParked || r.state == Residence::kSpilling;
  }
  return s;
}

Status CompositeStore::CheckInvariants() const {
  STRATA_RETURN_IF_ERROR(disk_->index().CheckInvariants());
  uint64_t by_state[kResidences] = {};
  for (const auto& [key, r] : residents_) {
    const std::string name = "record " + key.ToFileStem();
    std::optional<IndexEntry> e = disk_->index().Find(key);
    if (!e) return Status::Internal(name + " is in memory but not in the disk index");
    if (e->state != DiskStateOf(static_cast<uint8_t>(r.state))) {
      return Status::Internal(name + " is " + std::string(TransferStateName(e->state)) +
                              " on disk but its memory copy disagrees");
    }
    if (!records_.contains(r.record) || records_.at(r.record).removed) {
      return Status::Internal(name + " has no memory record");
    }
    const SlabRecords::Record& rec = records_.at(r.record);
    if (rec.has_row() != (e->row == RowPresence::kPresent)) {
      return Status::Internal(name + " has its row in one tier only");
    }
    if (lru_.count(r.tick) == 0 || lru_.at(r.tick) != key) {
      return Status::Internal(name + " is missing from the memory LRU order");
    }
    by_state[static_cast<size_t>(r.state)] += rec.slots();
  }
  for (size_t i = 0; i < kResidences; ++i) {
    if (by_state[i] != slots_in_[i]) return Status::Internal("slot counts by residence drifted");
  }
  for (const IndexEntry& e : disk_->index().Entries()) {
    const bool held = e.state == TransferState::kParked || e.state == TransferState::kSpilling;
    if (held && residents_.count(e.key) == 0) {
      return Status::Internal("record " + e.key.ToFileStem() + " is " +
                              std::string(TransferStateName(e.state)) + " with no memory copy");
    }
  }
  if (lru_.size() != residents_.size()) return Status::Internal("memory LRU order drifted");
  if (!idle()) return Status::Ok();
  for (const IndexEntry& e : disk_->index().Entries()) {
    if (e.pin_count != 0) {
      return Status::Internal("record " + e.key.ToFileStem() + " is pinned while idle");
    }
  }
  if (records_.size() != residents_.size()) {
    return Status::Internal("memory records outlive their residents");
  }
  if (pool_->used_slots() != records_.held_slots()) {
    return Status::Internal("pool has " + std::to_string(pool_->used_slots()) +
                            " slots in use; records hold " + std::to_string(records_.held_slots()));
  }
  for (const auto& [key, r] : residents_) {
    if (records_.at(r.record).users != 0) {
      return Status::Internal("record " + key.ToFileStem() + " is in use while idle");
    }
  }
  return Status::Ok();
}

}  // namespace strata
