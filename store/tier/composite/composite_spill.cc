// CompositeStore write-behind and shutdown (seed 2.4, 2.5): parked records
// are written to disk from their memory slabs when free + clean slots fall
// below twice the intake, and, with drain_on_shutdown, at Close.
#include <chrono>

#include "store/base/deliberate_leak.h"
#include "store/tier/composite/composite_store.h"

namespace strata {

namespace {

// One wait for a completion while closing.
constexpr std::chrono::milliseconds kCloseWaitSlice{10};

}  // namespace

SlotRoom CompositeStore::Room() const {
  return {.free = pool_->free_slots(),
          .clean = slots_in_[static_cast<size_t>(Residence::kDurable)],
          .writing = slots_in_[static_cast<size_t>(Residence::kSpilling)],
          .intake = pool_->intake_slots()};
}

std::vector<ParkedRecord> CompositeStore::Parked(Order order) const {
  std::vector<ParkedRecord> parked;
  auto add = [&](const PrefixKey& key) {
    const Resident& r = residents_.at(key);
    if (r.state != Residence::kParked) return;
    ParkedRecord p{.key = key, .retry_at_ms = r.retry_at_ms};
    std::optional<IndexEntry> e = disk_->index().Find(key);
    if (e && e->parent) {
      auto parent = residents_.find(*e->parent);
      if (parent != residents_.end() && parent->second.state == Residence::kParked) {
        p.parked_parent = *e->parent;
      }
    }
    parked.push_back(p);
  };
  if (order == Order::kColdestFirst) {
    for (const auto& [tick, key] : lru_) add(key);
  } else {
    for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) add(it->second);
  }
  return parked;
}

SpillStart CompositeStore::StartSpill(const PrefixKey& key) {
  auto it = residents_.find(key);
  if (it == residents_.end() || it->second.state != Residence::kParked) return SpillStart::kRefused;
  const uint64_t record = it->second.record;
  const SlabRecords::Record& rec = records_.at(record);
  const SharePacking packing{.pages = rec.replicated_pages, .row = rec.replicated_row};
  HostBuffers buffers{records_.PageIo(record), records_.RowIo(record)};
  records_.Use(record);
  SetResidence(it->second, Residence::kSpilling);
  const uint64_t tag = next_op_++;
  spills_[tag] = Spill{key, record};
  Status s = held_->Spill(key, packing, std::move(buffers), tag);
  if (s.ok()) return SpillStart::kStarted;
  // No room under the disk limit (or the tier stopped): stays parked.
  spills_.erase(tag);
  if (auto again = residents_.find(key);
      again != residents_.end() && again->second.record == record) {
    SetResidence(again->second, Residence::kParked);
    again->second.retry_at_ms = policy_.RetryAt(now_ms_);
  }
  records_.Release(record);
  return SpillStart::kRefused;
}

void CompositeStore::FinishSpill(const HostJobDone& d) {
  auto it = spills_.find(d.tag);
  if (it == spills_.end()) return;
  Spill sp = std::move(it->second);
  spills_.erase(it);
  auto r = residents_.find(sp.key);
  if (r != residents_.end() && r->second.record == sp.record) {
    const Residence state = r->second.state;
    if (d.status.ok()) {
      // A fan-out write can commit before the memory copy finishes: the
      // copy then completes a resident whose file is already there.
      SetResidence(r->second,
                   state == Residence::kCopying ? Residence::kWarming : Residence::kDurable);
    } else if (d.kept) {
      // No file: parked (now, or by the copy still running), written from
      // memory after the backoff.
      if (state == Residence::kSpilling) SetResidence(r->second, Residence::kParked);
      r->second.retry_at_ms = policy_.RetryAt(now_ms_);
    }
    // A terminal failure already discarded the record through the listener.
  }
  if (sp.from_device && !d.status.ok() && d.kept) ++stats_.fanout_write_failures;
  if (!sp.from_device) records_.Release(sp.record);
  if (sp.event) events_.push_back(std::move(*sp.event));
}

void CompositeStore::Maintain() {
  if (closed_ || !policy_.WantsWriteBehind(Room())) return;
  WriteBehindRound round = policy_.StartRound(Parked(Order::kColdestFirst), now_ms_);
  while (std::optional<PrefixKey> key = round.Next(Room())) {
    round.Report(*key, StartSpill(*key));
  }
}

void CompositeStore::Drain(std::chrono::steady_clock::time_point write_until) {
  const std::vector<PrefixKey> order = policy_.DrainOrder(Parked(Order::kMostRecentFirst));
  size_t next = 0;
  DrainState state{.write_until = write_until, .last_progress = options_.clock.steady()};
  for (;;) {
    state.now = options_.clock.steady();
    state.writes_in_flight = spills_.size();
    state.left_to_start = order.size() - next;
    switch (policy_.NextDrainAction(state)) {
      case DrainAction::kStart:
        (void)StartSpill(order[next++]);  // a refused write leaves the record parked
        break;
      case DrainAction::kFinish:
      case DrainAction::kGiveUp: return;
      case DrainAction::kWait: {
        const size_t before = spills_.size();
        disk_->WaitForCompletion(kCloseWaitSlice);
        PollOnce();
        if (spills_.size() < before) state.last_progress = options_.clock.steady();
        break;
      }
    }
  }
}

Status CompositeStore::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto deadline = options_.clock.steady() + options_.close_deadline;
  auto before_deadline = [&] { return options_.clock.steady() < deadline; };
  // Accepted copy-outs and restores finish first; copies become parked.
  while ((!copy_outs_.empty() || !fetches_.empty() || !reads_.empty()) && before_deadline()) {
    if (!transfers_->WaitForCompletion(kCloseWaitSlice)) {
      disk_->WaitForCompletion(std::chrono::milliseconds(1));
    }
    PollOnce();
  }
  if (options_.drain.mode != ShutdownDrain::Mode::kOff && disk_->stopped().ok()) {
    const auto now = options_.clock.steady();
    Drain(options_.drain.mode == ShutdownDrain::Mode::kBounded
              ? now + options_.drain.write_limit
              : std::chrono::steady_clock::time_point::max());
  }
  // Accepted writes drain before memory is released.
  while (!spills_.empty() && before_deadline()) {
    disk_->WaitForCompletion(kCloseWaitSlice);
    PollOnce();
  }
  Status d = disk_->Close();
  Status t = transfers_->Close(options_.clock.LeftUntil(deadline));
  if (!d.ok() || !t.ok() || tracker_.active() > 0 || !spills_.empty()) {
    pool_->Leak();                         // copies or disk I/O may still use the slabs
    LeakOnPurpose(std::move(transfers_));  // threads may still run
    if (!t.ok()) return t;
    if (!d.ok()) return d;
    return Status::Aborted("composite store copies did not drain");
  }
  return Status::Ok();
}

}  // namespace strata
