// MemoryStore's side of the handover seam (store/tier/record_handover.h):
// evicted records offered to the sink, and records imported from outside.
#include <algorithm>
#include <cstring>

#include "store/tier/memory_store.h"

namespace strata {

RecordView MemoryStore::ViewOf(const PrefixKey& key, uint64_t id, uint32_t tail_pages) const {
  const SlabRecords::Record& r = records_.at(id);
  RecordView v;
  v.key = key;
  if (auto it = lineage_.find(key); it != lineage_.end()) {
    v.parent = it->second.parent;
    v.bucket = it->second.bucket;
  }
  v.tail_pages = tail_pages;
  v.replicated_pages = r.replicated_pages;
  v.replicated_row = r.replicated_row;
  for (const IoPiece& p : records_.PageIo(id)) v.pages.emplace_back(p.data, p.bytes);
  for (const IoPiece& p : records_.RowIo(id)) v.row.emplace_back(p.data, p.bytes);
  return v;
}

std::vector<RecordView> MemoryStore::HeldAncestors(std::optional<PrefixKey> up, size_t max) const {
  std::vector<RecordView> out;
  while (up && out.size() < max) {
    std::optional<IndexEntry> e = index_.Find(*up);
    if (!e || e->state != TransferState::kReady || !records_.contains(e->location.value)) break;
    out.push_back(ViewOf(e->key, e->location.value, e->tail_page_count));
    auto it = lineage_.find(e->key);
    up = it != lineage_.end() ? it->second.parent : std::nullopt;
  }
  return out;
}

std::vector<RecordView> MemoryStore::HeldChain(const PrefixKey& key, size_t ancestors_max) const {
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e || e->state != TransferState::kReady || !records_.contains(e->location.value)) return {};
  auto it = lineage_.find(key);
  std::vector<RecordView> chain =
      HeldAncestors(it != lineage_.end() ? it->second.parent : std::nullopt, ancestors_max);
  std::reverse(chain.begin(), chain.end());
  chain.push_back(ViewOf(e->key, e->location.value, e->tail_page_count));
  return chain;
}

void MemoryStore::OfferEvicted(const std::vector<RemovedRecord>& removed) {
  if (eviction_sink_ == nullptr) return;
  // `removed` is a leaf, then the page-only ancestors it left childless:
  // offered root side first, each after the ancestors still indexed.
  for (auto r = removed.rbegin(); r != removed.rend(); ++r) {
    if (r->state != TransferState::kReady || !records_.contains(r->location.value)) continue;
    // A demotion the sink accepted is pooled already.
    if (auto d = demotions_.find(r->key);
        d != demotions_.end() && d->second == Demotion::kAccepted) {
      continue;
    }
    auto it = lineage_.find(r->key);
    std::vector<RecordView> chain = HeldAncestors(
        it != lineage_.end() ? it->second.parent : std::nullopt, kOfferedAncestorsMax);
    std::reverse(chain.begin(), chain.end());
    chain.push_back(ViewOf(r->key, r->location.value, r->tail_page_count));
    eviction_sink_->OnEvicted(chain);
  }
}

void MemoryStore::ReleaseDemoted(const PrefixKey& key) {
  auto d = demotions_.find(key);
  if (d == demotions_.end() || d->second != Demotion::kOffered) return;  // gone meanwhile
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e) return;
  if (e->child_count != 0 || e->pin_count != 0 || e->state != TransferState::kReady) {
    d->second = Demotion::kAccepted;
    return;
  }
  Result<std::vector<RemovedRecord>> removed = index_.Remove(key);
  if (!removed.ok()) return;
  stats_.memory.evicted_total += removed->size();
  stats_.memory.demoted_total += removed->size();
  ApplyRemoved(*removed);
}

void MemoryStore::Demote() {
  if (eviction_sink_ == nullptr || closed_) return;
  std::vector<PrefixKey> accepted;
  std::vector<PrefixKey> given_up;
  eviction_sink_->TakeDemotionOutcomes(accepted, given_up);
  for (const PrefixKey& key : given_up) {
    awaiting_demotion_.erase(key);
    if (auto d = demotions_.find(key); d != demotions_.end() && d->second == Demotion::kOffered) {
      d->second = Demotion::kGivenUp;
    }
  }
  for (const PrefixKey& key : accepted) {
    awaiting_demotion_.erase(key);
    ReleaseDemoted(key);
  }
  if (!awaiting_demotion_.empty() || now_ms_ < demotion_idle_until_ms_) return;
  const uint64_t total = pool_->total_slots();
  if (pool_->used_slots() <= total - total / kDemotionHeadroomDivisor ||
      !eviction_sink_->TakesDemotions()) {
    return;
  }
  std::optional<IndexEntry> coldest = index_.ColdestLeaf([this](const IndexEntry& e) {
    return e.state == TransferState::kReady && !demotions_.contains(e.key) &&
           records_.contains(e.location.value);
  });
  if (!coldest) {
    // Every leaf was demoted, given up, pinned or busy: scan again later.
    demotion_idle_until_ms_ = now_ms_ + kDemotionIdleMs;
    return;
  }
  std::vector<RecordView> chain = HeldChain(coldest->key, kOfferedAncestorsMax);
  // Ancestors up to the nearest one the sink accepted already: it holds those.
  for (size_t i = chain.size() - 1; i-- > 0;) {
    if (auto d = demotions_.find(chain[i].key);
        d != demotions_.end() && d->second == Demotion::kAccepted) {
      chain.erase(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      break;
    }
  }
  for (const RecordView& r : chain) {
    demotions_[r.key] = Demotion::kOffered;
    awaiting_demotion_.insert(r.key);
  }
  eviction_sink_->OnDemoted(chain);
}

namespace {

// Copies `from` (pieces of any sizes) over `to` in order; false when the
// totals differ.
bool CopyPieces(std::span<const std::span<const std::byte>> from, const std::vector<IoPiece>& to) {
  uint64_t from_total = 0;
  uint64_t to_total = 0;
  for (const auto& f : from) from_total += f.size();
  for (const IoPiece& t : to) to_total += t.bytes;
  if (from_total != to_total) return false;
  size_t fi = 0;
  uint64_t fo = 0;
  for (const IoPiece& t : to) {
    uint64_t done = 0;
    while (done < t.bytes) {
      const uint64_t n = std::min(t.bytes - done, from[fi].size() - fo);
      std::memcpy(t.data + done, from[fi].data() + fo, n);
      done += n;
      fo += n;
      if (fo == from[fi].size()) {
        ++fi;
        fo = 0;
      }
    }
  }
  return true;
}

}  // namespace

bool MemoryStore::Holds(const PrefixKey& key) const {
  const std::optional<IndexEntry> e = index_.Find(key);
  return !closed_ && e && e->state == TransferState::kReady;
}

Status MemoryStore::Import(const RecordView& record, uint64_t now_ms) {
  if (closed_) return Status::Aborted("memory store is closed");
  if (index_.Contains(record.key)) {
    return Status::AlreadyExists("record " + record.key.ToFileStem() + " is held");
  }
  const bool parent_held = record.parent && index_.Contains(*record.parent);
  if (parent_held) (void)index_.Pin(*record.parent);
  const SlabShape shape{.pages = record.tail_pages,
                        .with_row = record.has_row(),
                        .replicated_pages = record.replicated_pages,
                        .replicated_row = record.replicated_row};
  const uint64_t need = records_.SlotsFor(shape);
  std::vector<SlotId> slots;
  const bool room =
      need + options_.keep_free_slots <= pool_->total_slots() && AllocateWithEviction(need, slots);
  if (!room) {
    if (parent_held) Unpin({*record.parent});
    return Status::Busy("no room for " + std::to_string(need) + " slots");
  }
  const uint64_t id = records_.Add(std::move(slots), shape);
  const bool copied =
      CopyPieces(record.pages, records_.PageIo(id)) && CopyPieces(record.row, records_.RowIo(id));
  Result<InsertResult> ins =
      copied ? index_.Insert({record.key, parent_held ? record.parent : std::nullopt, record.bucket,
                              NodeLocation(id), TransferState::kReady,
                              record.has_row() ? RowPresence::kPresent : RowPresence::kPageOnly},
                             std::max(now_ms_, now_ms))
             : Result<InsertResult>(Status::InvalidArgument("record bytes do not fit its shape"));
  if (parent_held) Unpin({*record.parent});
  if (ins.ok() && ins->tail_page_count != record.tail_pages) {
    Result<std::vector<RemovedRecord>> removed = index_.Remove(record.key);
    if (removed.ok()) ApplyRemoved(*removed);
    records_.Release(id);
    return Status::FailedPrecondition(
        "record " + record.key.ToFileStem() + " holds " + std::to_string(record.tail_pages) +
        " pages, the index wants " + std::to_string(ins->tail_page_count));
  }
  if (!ins.ok()) {
    records_.Remove(id);
    records_.Release(id);
    return ins.status();
  }
  lineage_[record.key] = {parent_held ? record.parent : std::nullopt, record.bucket};
  records_.Release(id);
  ++stats_.memory.stored_total;
  return Status::Ok();
}

}  // namespace strata
