// CompositeStore restores (seed 2.4): resident chain records upload from
// their slabs; disk-only ones are first read into memory slabs (read_into)
// and become durable residents; a chain memory cannot hold streams from disk
// straight to the ticket, as does, with the direct transport
// (options.direct), every chain whole on disk and not all in memory.
#include "store/tier/composite/composite_store.h"

namespace strata {

Status CompositeStore::Fetch(const HostHit& hit, const InboundTicket& ticket) {
  if (closed_) return Status::Aborted("composite store is closed");
  if (ticket.page_ids.size() != hit.pages) {
    return Status::InvalidArgument("ticket has " + std::to_string(ticket.page_ids.size()) +
                                   " page ids for a restore of " + std::to_string(hit.pages));
  }
  if (hit.chain.empty()) return Status::InvalidArgument("a hit names at least its endpoint");
  uint64_t chain_pages = 0;
  bool whole_on_disk = true;  // every record committed to a file
  for (size_t i = 0; i < hit.chain.size(); ++i) {
    const PrefixKey& k = hit.chain[i];
    std::optional<IndexEntry> e = disk_->index().Find(k);
    if (!e || e->state == TransferState::kInFlight) {
      return Status::NotFound("record " + k.ToFileStem() + " left the store since the lookup");
    }
    if (i + 1 == hit.chain.size() && e->row != RowPresence::kPresent) {
      return Status::NotFound("record " + k.ToFileStem() + " lost its row");
    }
    STRATA_ASSERT(e->state == TransferState::kReady || residents_.count(k) != 0,
                  "a parked record has a memory copy");
    whole_on_disk = whole_on_disk && e->state == TransferState::kReady;
    chain_pages += e->tail_page_count;
  }
  if (chain_pages != hit.skip_pages + hit.pages) {
    return Status::FailedPrecondition("chain of " + hit.endpoint.ToFileStem() +
                                      " changed since the lookup");
  }
  bool all_in_memory = true;  // every record resident and usable now
  bool warming = false;       // some record's copy-in from the GPU is under way
  for (const PrefixKey& k : hit.chain) {
    auto r = residents_.find(k);
    warming = warming || (r != residents_.end() && (r->second.state == Residence::kWarming ||
                                                    r->second.state == Residence::kCopying));
    all_in_memory = all_in_memory && r != residents_.end() && r->second.usable();
  }
  if (options_.direct && whole_on_disk && !all_in_memory) {
    // Straight from the files to the ticket; memory warms when the runtime
    // publishes the restored checkpoint (Warm).
    Status direct = StreamFromDisk(hit, ticket);
    if (direct.ok()) ++stats_.fetches;
    return direct;
  }
  if (warming) {
    return Status::Busy("a record of the chain of " + hit.endpoint.ToFileStem() +
                        " is still being copied into memory");
  }
  bool fits = true;
  Status started = StartFetch(hit, ticket, fits);
  if (!fits && !whole_on_disk) {
    return Status::Busy("chain of " + hit.endpoint.ToFileStem() +
                        " fits neither memory nor, yet, disk alone");
  }
  if (!fits) started = StreamFromDisk(hit, ticket);
  if (started.ok()) ++stats_.fetches;
  return started;
}

Status CompositeStore::StreamFromDisk(const HostHit& hit, const InboundTicket& ticket) {
  // Unretained, one record at a time (through staging on the staged
  // transport), so room for the largest record's staging lets it run. The
  // direct transport moves the files straight into the GPU and needs none.
  uint64_t staging = 0;
  if (disk_->files().device_jobs_stage()) {
    for (const PrefixKey& k : hit.chain) {
      staging = std::max(staging, records_.SlotsFor({held_->ShapeOf(k)->tail_pages}));
    }
  }
  if (!MakeFree(staging)) {
    return Status::Busy("no staging room for the chain of " + hit.endpoint.ToFileStem());
  }
  return disk_->Fetch(hit, ticket);
}

// Starts a restore through memory. `fits` is false (and nothing started) when
// the records to read do not fit even after evicting clean ones.
Status CompositeStore::StartFetch(const HostHit& hit, const InboundTicket& ticket, bool& fits) {
  uint64_t need = 0;
  bool reading = false;
  for (const PrefixKey& k : hit.chain) {
    need += SlotsToRead(k);
    auto r = residents_.find(k);
    reading = reading || (r != residents_.end() && r->second.state == Residence::kReading);
  }
  // Hold the resident records so that making room never evicts them.
  std::vector<uint64_t> held;
  for (const PrefixKey& k : hit.chain) {
    if (auto r = residents_.find(k); r != residents_.end()) {
      records_.Use(r->second.record);
      held.push_back(r->second.record);
    }
  }
  std::vector<SlotId> slots;
  if (need > 0 && !ReserveWarm(need, slots)) {
    for (uint64_t id : held) records_.Release(id);
    fits = false;
    return Status::Ok();
  }
  const uint64_t id = next_op_++;
  FetchOp op;
  op.ticket = ticket;
  op.endpoint = hit.endpoint;
  op.chain = hit.chain;
  op.skip_pages = hit.skip_pages;
  if (need == 0 && !reading) {
    // Every record is resident: upload now, or fail with nothing started.
    op.records = held;
    Result<std::vector<TransferJob>> jobs = records_.PlanRestore(held, hit.skip_pages, ticket);
    Status s = jobs.ok() ? tracker_.Start(id, std::move(*jobs)) : jobs.status();
    if (!s.ok()) {
      for (uint64_t r : held) records_.Release(r);
      return s.WithContext("restore of " + hit.endpoint.ToFileStem());
    }
    op.uploading = true;
    for (const PrefixKey& k : hit.chain) (void)held_->Pin(k);
    fetches_.emplace(id, std::move(op));
    return Status::Ok();
  }
  for (const PrefixKey& k : hit.chain) (void)held_->Pin(k);
  std::vector<std::pair<PrefixKey, uint64_t>> to_read;  // key, read tag
  size_t next_slot = 0;
  for (const PrefixKey& k : hit.chain) {
    if (auto r = residents_.find(k); r != residents_.end()) {
      op.records.push_back(r->second.record);  // held above
      if (r->second.state == Residence::kReading) {
        reads_.at(r->second.read).waiting.push_back(id);
        ++op.reads_left;
      }
      continue;
    }
    const FileShape shape = *held_->ShapeOf(k);
    const SlabShape slab{shape.tail_pages, shape.has_row, shape.replicated_pages,
                         shape.replicated_row};
    const auto n = static_cast<std::ptrdiff_t>(records_.SlotsFor(slab));
    std::vector<SlotId> mine(slots.begin() + static_cast<std::ptrdiff_t>(next_slot),
                             slots.begin() + static_cast<std::ptrdiff_t>(next_slot) + n);
    next_slot += static_cast<size_t>(n);
    const uint64_t record = records_.Add(std::move(mine), slab);  // the read's user
    records_.Use(record);                                         // the fetch's
    op.records.push_back(record);
    if (n == 0) {  // a page-only record owning no pages: nothing to read
      AddResident(k, record, Residence::kDurable);
      records_.Release(record);
      continue;
    }
    const uint64_t tag = next_op_++;
    AddResident(k, record, Residence::kReading).read = tag;
    reads_[tag] = Read{k, record, {id}};
    ++op.reads_left;
    to_read.emplace_back(k, tag);
  }
  fetches_.emplace(id, std::move(op));
  for (const auto& [k, tag] : to_read) {
    const uint64_t record = reads_.at(tag).record;
    Status s = held_->ReadInto(k, 0, {records_.PageIo(record), records_.RowIo(record)}, tag);
    if (!s.ok()) {  // reported at Poll
      host_done_.push_back(
          {.tag = tag, .key = k, .kind = HostJobDone::Kind::kReadInto, .status = s});
    }
  }
  return Status::Ok();
}

void CompositeStore::FinishRead(const HostJobDone& d) {
  auto it = reads_.find(d.tag);
  if (it == reads_.end()) return;
  const Read rd = std::move(it->second);
  reads_.erase(it);
  auto r = residents_.find(rd.key);
  if (r != residents_.end() && r->second.record == rd.record) {
    if (d.status.ok()) {
      SetResidence(r->second, Residence::kDurable);
      r->second.read = 0;
      const SlabRecords::Record& rec = records_.at(rd.record);
      ++(rec.replicated_pages || rec.replicated_row ? stats_.memory.packed_total
                                                    : stats_.memory.per_rank_total);
      ++stats_.memory.stored_total;  // a promotion counts as a new memory store
      stats_.memory.bytes_in_total += d.bytes;
    } else {
      EraseResident(rd.key);
    }
  }
  records_.Release(rd.record);
  for (uint64_t id : rd.waiting) {
    auto f = fetches_.find(id);
    if (f == fetches_.end()) continue;
    --f->second.reads_left;
    if (!d.status.ok() && f->second.failed.ok()) {
      f->second.failed = d.status.WithContext("read " + rd.key.ToFileStem());
    }
    if (f->second.reads_left > 0) continue;
    if (f->second.failed.ok()) {
      StartUpload(id);
    } else {
      FinishFetch(id, f->second.failed, 0);
    }
  }
}

void CompositeStore::StartUpload(uint64_t id) {
  FetchOp& f = fetches_.at(id);
  Result<std::vector<TransferJob>> jobs = records_.PlanRestore(f.records, f.skip_pages, f.ticket);
  Status s = jobs.ok() ? tracker_.Start(id, std::move(*jobs)) : jobs.status();
  if (s.code() == StatusCode::kBusy) return;  // the queues are full: Poll tries again
  if (!s.ok()) {
    FinishFetch(id, s, 0);
    return;
  }
  f.uploading = true;
}

// `status` is a copy on purpose: the caller's may live in the fetch entry
// erased below.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
void CompositeStore::FinishFetch(uint64_t id, Status status, uint64_t bytes) {
  auto it = fetches_.find(id);
  if (it == fetches_.end()) return;
  const FetchOp f = std::move(it->second);
  fetches_.erase(it);
  for (uint64_t record : f.records) records_.Release(record);
  held_->Unpin(f.chain);
  if (!status.ok()) {
    ++stats_.fetch_failed;
    events_.push_back({StoreEvent::Kind::kFetchFailed, 0, f.ticket.ticket, f.endpoint, status, 0});
    return;
  }
  (void)held_->Touch(f.endpoint, now_ms_);
  for (const PrefixKey& k : f.chain) {
    if (auto r = residents_.find(k); r != residents_.end()) TouchResident(r->second);
  }
  stats_.memory.bytes_out_total += bytes;
  events_.push_back(
      {StoreEvent::Kind::kFetched, 0, f.ticket.ticket, f.endpoint, Status::Ok(), bytes});
}

}  // namespace strata
