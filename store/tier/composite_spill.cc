// CompositeStore write-behind and shutdown (seed 2.4, 2.5): parked records
// are written to disk from their memory slabs when free + clean slots fall
// below twice the intake, and, with drain_on_shutdown, at Close.
#include <chrono>
#include <unordered_set>

#include "store/tier/composite_store.h"

namespace strata {

namespace {

// Writes a drain keeps in flight at once.
constexpr size_t kDrainWritesInFlight = 8;
// A drain that sees no completion for this long gives up on the rest.
constexpr std::chrono::seconds kDrainStallBound{60};
// One wait for a completion while closing.
constexpr std::chrono::milliseconds kCloseWaitSlice{10};

}  // namespace

PrefixKey CompositeStore::SpillRoot(const PrefixKey& key) const {
  PrefixKey root = key;
  for (;;) {
    std::optional<IndexEntry> e = disk_->index().Find(root);
    if (!e || !e->parent) return root;
    auto p = residents_.find(*e->parent);
    if (p == residents_.end() || p->second.state != Residence::kParked) return root;
    root = *e->parent;
  }
}

bool CompositeStore::StartSpill(const PrefixKey& key) {
  auto it = residents_.find(key);
  if (it == residents_.end() || it->second.state != Residence::kParked) return false;
  const uint64_t record = it->second.record;
  const SlabRecords::Record& rec = records_.at(record);
  const bool replicated_pages = rec.replicated_pages;
  const bool replicated_row = rec.replicated_row;
  HostBuffers buffers{records_.PageIo(record), records_.RowIo(record)};
  records_.Use(record);
  SetResidence(it->second, Residence::kSpilling);
  const uint64_t tag = next_op_++;
  spills_[tag] = Spill{key, record};
  Status s = disk_->Spill(key, replicated_pages, replicated_row, std::move(buffers), tag);
  if (s.ok()) return true;
  // No room under the disk limit (or the tier stopped): stays parked.
  spills_.erase(tag);
  if (auto again = residents_.find(key);
      again != residents_.end() && again->second.record == record) {
    SetResidence(again->second, Residence::kParked);
    again->second.retry_at_ms = now_ms_ + options_.spill_retry_ms;
  }
  records_.Release(record);
  return false;
}

void CompositeStore::FinishSpill(const HostJobDone& d) {
  auto it = spills_.find(d.tag);
  if (it == spills_.end()) return;
  const Spill sp = it->second;
  spills_.erase(it);
  auto r = residents_.find(sp.key);
  if (r != residents_.end() && r->second.record == sp.record) {
    if (d.status.ok()) {
      SetResidence(r->second, Residence::kDurable);
    } else if (d.fs_full) {
      SetResidence(r->second, Residence::kParked);
      r->second.retry_at_ms = now_ms_ + options_.spill_retry_ms;
    }
    // A terminal failure already discarded the record through the listener.
  }
  records_.Release(sp.record);
}

void CompositeStore::Maintain() {
  if (closed_) return;
  // Free + clean slots (counting writes under way, which become clean)
  // below twice the intake: write the coldest parked records. That bounds
  // what is written ahead of need to 2 x intake plus one largest record.
  const uint64_t target = 2 * pool_->intake_slots();
  auto room = [&] {
    return pool_->free_slots() + slots_in_[static_cast<size_t>(Residence::kDurable)] +
           slots_in_[static_cast<size_t>(Residence::kSpilling)];
  };
  if (room() >= target) return;
  std::vector<PrefixKey> coldest;
  for (const auto& [tick, key] : lru_) {
    const Resident& r = residents_.at(key);
    if (r.state == Residence::kParked && r.retry_at_ms <= now_ms_) coldest.push_back(key);
  }
  for (const PrefixKey& k : coldest) {
    if (room() >= target) break;
    const PrefixKey root = SpillRoot(k);  // a parked parent is written first
    auto r = residents_.find(root);
    if (r != residents_.end() && r->second.retry_at_ms <= now_ms_) (void)StartSpill(root);
  }
}

std::vector<PrefixKey> CompositeStore::DrainOrder() const {
  std::vector<PrefixKey> order;
  std::unordered_set<PrefixKey> listed;
  std::vector<PrefixKey> path;
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {  // most recent first
    if (residents_.at(it->second).state != Residence::kParked) continue;
    path.clear();
    for (PrefixKey k = it->second;;) {
      path.push_back(k);
      std::optional<IndexEntry> e = disk_->index().Find(k);
      if (!e || !e->parent) break;
      auto p = residents_.find(*e->parent);
      if (p == residents_.end() || p->second.state != Residence::kParked) break;
      k = *e->parent;
    }
    for (auto k = path.rbegin(); k != path.rend(); ++k) {  // required ancestors first
      if (listed.insert(*k).second) order.push_back(*k);
    }
  }
  return order;
}

void CompositeStore::Drain(std::chrono::steady_clock::time_point write_until) {
  const std::vector<PrefixKey> order = DrainOrder();
  size_t next = 0;
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const bool may_start = now < write_until;
    while (may_start && next < order.size() && spills_.size() < kDrainWritesInFlight) {
      (void)StartSpill(order[next++]);  // a refused write leaves the record parked
    }
    if (spills_.empty() && (!may_start || next >= order.size())) return;
    if (spills_.empty()) continue;
    if (now - last_progress > kDrainStallBound) return;
    const size_t before = spills_.size();
    disk_->WaitForCompletion(kCloseWaitSlice);
    PollOnce();
    if (spills_.size() < before) last_progress = std::chrono::steady_clock::now();
  }
}

Status CompositeStore::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto deadline = std::chrono::steady_clock::now() + options_.close_deadline;
  auto before_deadline = [&] { return std::chrono::steady_clock::now() < deadline; };
  // Accepted copy-outs and restores finish first; copies become parked.
  while ((!copy_outs_.empty() || !fetches_.empty() || !reads_.empty()) && before_deadline()) {
    if (!transfers_->WaitForCompletion(kCloseWaitSlice)) {
      disk_->WaitForCompletion(std::chrono::milliseconds(1));
    }
    PollOnce();
  }
  if (options_.drain.mode != ShutdownDrain::Mode::kOff && disk_->stopped().ok()) {
    const auto now = std::chrono::steady_clock::now();
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
  const auto left =
      std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 deadline - std::chrono::steady_clock::now()));
  Status t = transfers_->Close(left);
  if (!d.ok() || !t.ok() || tracker_.active() > 0 || !spills_.empty()) {
    pool_->Leak();         // copies or disk I/O may still use the slabs
    transfers_.release();  // NOLINT(bugprone-unused-return-value): threads may still run
    if (!t.ok()) return t;
    if (!d.ok()) return d;
    return Status::Aborted("composite store copies did not drain");
  }
  return Status::Ok();
}

}  // namespace strata
