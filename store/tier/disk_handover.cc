// DiskFiles' handover below the instance (seed 2.15): a record capacity
// eviction removes is read back, offered to the EvictionSink, then unlinked.
#include "store/tier/disk_handover.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "store/tier/disk_files.h"

namespace strata {

namespace {

// Ancestors a handover reads with the evicted record, at most (as the memory
// tier offers).
constexpr size_t kHandoverAncestorsMax = 64;

uint64_t RoundUp(uint64_t n) {
  return (n + AlignedBytes::kAlign - 1) / AlignedBytes::kAlign * AlignedBytes::kAlign;
}

}  // namespace

AlignedBytes::AlignedBytes(uint64_t bytes)
    : data_(static_cast<std::byte*>(
          std::aligned_alloc(kAlign, RoundUp(std::max<uint64_t>(bytes, 1))))) {
  STRATA_ASSERT(data_ != nullptr, "handover buffer allocation failed");
}

void AlignedBytes::Free::operator()(std::byte* p) const { std::free(p); }

RecordView HandoverRecord::View() const {
  RecordView v;
  v.key = key;
  v.parent = parent;
  v.bucket = bucket;
  v.tail_pages = tail_pages;
  v.replicated_pages = replicated_pages;
  v.replicated_row = replicated_row;
  for (uint32_t i = 0; i < tail_pages; ++i)
    v.pages.emplace_back(bytes->data() + i * page_bytes, page_bytes);
  if (has_row) v.row.emplace_back(bytes->data() + uint64_t{tail_pages} * page_bytes, row_bytes);
  return v;
}

bool DiskFiles::Handable(const File& f) const {
  // One rank's bytes of a record, which its transport must carry at once
  // (with ranks in separate processes a record link, share_bytes_max).
  return f.written && !f.writing &&
         f.tail_pages * layout_.stored_page_record_bytes(f.replicated_pages) +
                 (f.has_row ? layout_.stored_row_segment_bytes(f.replicated_row) : 0) <=
             transport_->share_bytes_max();
}

void DiskFiles::MarkDemotion(const PrefixKey& key, File::Demotion from, File::Demotion to) {
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e) return;
  auto f = files_.find(e->location.value);
  if (f != files_.end() && f->second.demotion == from) f->second.demotion = to;
}

void DiskFiles::ReleaseDemoted(const PrefixKey& key) {
  std::optional<IndexEntry> e = index_.Find(key);
  if (!e) return;  // gone meanwhile (evicted, expired, removed)
  auto f = files_.find(e->location.value);
  // Only the file that was offered: a record evicted and stored again
  // since is a new file, never offered.
  if (f == files_.end() || f->second.demotion != File::Demotion::kOffered) return;
  if (e->child_count != 0 || e->pin_count != 0 || e->state != TransferState::kReady) {
    f->second.demotion = File::Demotion::kAccepted;
    return;
  }
  Result<std::vector<RemovedRecord>> removed = index_.Remove(key);
  if (!removed.ok()) return;
  stats_.disk.evicted_total += removed->size();
  stats_.disk.demoted_total += removed->size();
  ApplyRemoved(*removed);
}

void DiskFiles::Demote() {
  if (eviction_sink_ == nullptr || !accepting()) return;
  std::vector<PrefixKey> accepted;
  std::vector<PrefixKey> given_up;
  eviction_sink_->TakeDemotionOutcomes(accepted, given_up);
  for (const PrefixKey& key : given_up) {
    awaiting_demotion_.erase(key);
    // Only the file that was offered (see ReleaseDemoted).
    MarkDemotion(key, File::Demotion::kOffered, File::Demotion::kGivenUp);
  }
  for (const PrefixKey& key : accepted) {
    awaiting_demotion_.erase(key);
    ReleaseDemoted(key);
  }
  // One demotion at a time: read, offered, then its outcome.
  if (demoting_ || !awaiting_demotion_.empty() || now_ms_ < demotion_idle_until_ms_) return;
  const uint64_t floor = limit_bytes_ - limit_bytes_ / kDemotionHeadroomDivisor;
  if (used_bytes_ - releasing_bytes_ <= floor || !eviction_sink_->TakesDemotions()) return;
  std::optional<IndexEntry> coldest = index_.ColdestLeaf([this](const IndexEntry& e) {
    if (e.state != TransferState::kReady) return false;
    auto f = files_.find(e.location.value);
    return f != files_.end() && f->second.demotion == File::Demotion::kNone && Handable(f->second);
  });
  if (!coldest) {
    // Every leaf was demoted, given up, pinned or busy: scan again later,
    // not on every poll.
    demotion_idle_until_ms_ = now_ms_ + kDemotionIdleMs;
    return;
  }
  StartHandover({}, coldest->key);
}

void DiskFiles::ApplyEvicted(const std::vector<RemovedRecord>& removed) {
  const auto handed = [&](const RemovedRecord& r) {
    auto f = files_.find(r.location.value);
    return r.state == TransferState::kReady && f != files_.end() && Handable(f->second);
  };
  const auto pooled = [&](const RemovedRecord& r) {
    auto f = files_.find(r.location.value);
    return f != files_.end() && f->second.demotion == File::Demotion::kAccepted;
  };
  // Records the manager accepted as demotions need no read: their files go now.
  if (eviction_sink_ == nullptr || closed_ || !transport_->stopped().ok() ||
      !std::all_of(removed.begin(), removed.end(), handed) ||
      std::all_of(removed.begin(), removed.end(), pooled)) {
    return ApplyRemoved(removed);
  }
  StartHandover(removed, std::nullopt);
}

void DiskFiles::StartHandover(const std::vector<RemovedRecord>& removed,
                              std::optional<PrefixKey> demote) {
  auto handover = std::make_shared<DiskHandover>();
  handover->demotion = demote.has_value();
  DiskOperation op;
  op.kind = DiskOperation::Kind::kHandover;
  // A record of ranks in separate processes comes in share_count() shares,
  // each rank's page records and row as that rank's file holds them. The
  // sink sees one record whose page record is every rank's share side by
  // side, rank order (a replicated part: rank zero's alone; the peers' equal
  // copies land in scratch and are dropped), the layout one process holding
  // every rank stores.
  const uint32_t shares = transport_->share_count();
  const auto add = [&](const PrefixKey& key, std::optional<PrefixKey> parent, Digest128 bucket,
                       uint32_t tail, bool has_row, const File& f, std::optional<uint64_t> file) {
    const uint64_t share_page = layout_.stored_page_record_bytes(f.replicated_pages);
    const uint64_t share_row = has_row ? layout_.stored_row_segment_bytes(f.replicated_row) : 0;
    const uint64_t page_bytes = share_page * (f.replicated_pages ? 1 : shares);
    const uint64_t row_bytes = share_row * (f.replicated_row ? 1 : shares);
    const uint64_t image = tail * page_bytes + row_bytes;
    const uint64_t scratch_pages = shares > 1 && f.replicated_pages ? tail * share_page : 0;
    const uint64_t scratch_bytes = scratch_pages + (shares > 1 && f.replicated_row ? share_row : 0);
    HandoverRecord h{.key = key,
                     .parent = parent,
                     .bucket = bucket,
                     .tail_pages = tail,
                     .has_row = has_row,
                     .replicated_pages = f.replicated_pages,
                     .replicated_row = f.replicated_row,
                     .page_bytes = page_bytes,
                     .row_bytes = row_bytes,
                     .evicted_file = file,
                     .bytes = std::make_unique<AlignedBytes>(image + scratch_bytes)};
    std::byte* const base = h.bytes->data();
    std::byte* const spare = base + image;  // the peers' replicated copies
    std::vector<HostBuffers> by_rank(shares);
    for (uint32_t r = 0; r < shares; ++r) {
      HostBuffers& b = by_rank[r];
      for (uint32_t i = 0; i < tail; ++i) {
        std::byte* at = f.replicated_pages
                            ? (r == 0 ? base + i * page_bytes : spare + i * share_page)
                            : base + i * page_bytes + r * share_page;
        b.pages.push_back({at, share_page});
      }
      if (has_row) {
        std::byte* row = base + uint64_t{tail} * page_bytes;
        std::byte* at =
            f.replicated_row ? (r == 0 ? row : spare + scratch_pages) : row + r * share_row;
        b.row.push_back({at, share_row});
      }
    }
    RecordJob j;
    j.kind = RecordJobKind::kFetch;
    j.key = key;
    j.parent = parent;
    j.bucket = bucket;
    j.tail_pages = tail;
    j.replicated_pages = f.replicated_pages;
    j.replicated_row = f.replicated_row;
    j.host_data = shares > 1;
    j.host_row = j.host_data && has_row;
    op.unsubmitted.push_back(std::move(j));
    op.host_by_key[key] = std::move(by_rank);
    handover->records.push_back(std::move(h));
  };
  // The evicted records' parents and buckets (the index has forgotten them).
  // `removed` is a leaf, then the ancestors it left childless: the topmost
  // one's parent is where the held chain starts.
  std::vector<std::optional<PrefixKey>> parents;
  std::vector<Digest128> buckets;
  for (const RemovedRecord& r : removed) {
    const File& f = files_.at(r.location.value);
    parents.push_back(f.parent);
    buckets.push_back(f.bucket);
  }
  // A demotion's walk starts at the demoted record and stops at an
  // ancestor the manager accepted before (what lies above it went with it);
  // one given up is offered again with its descendant.
  std::vector<IndexEntry> held;
  std::optional<PrefixKey> up = demote ? demote : parents.empty() ? std::nullopt : parents.back();
  while (up && held.size() < kHandoverAncestorsMax) {
    std::optional<IndexEntry> e = index_.Find(*up);
    if (!e || e->state != TransferState::kReady) break;
    const File& f = files_.at(e->location.value);
    if (!Handable(f) || (demote && !held.empty() && f.demotion == File::Demotion::kAccepted)) {
      break;
    }
    held.push_back(*e);
    up = e->parent;
  }
  std::reverse(held.begin(), held.end());
  for (const IndexEntry& e : held) {
    const File& f = files_.at(e.location.value);
    (void)index_.Pin(e.key);
    handover->pinned.push_back(e.key);
    add(e.key, e.parent, e.bucket_digest, e.tail_page_count,
        e.row == RowPresence::kPresent && f.has_row, f, std::nullopt);
  }
  for (size_t i = removed.size(); i-- > 0;) {
    const RemovedRecord& r = removed[i];
    File& f = files_.at(r.location.value);
    if (listener_ != nullptr) listener_->OnRecordRemoved(r.key);
    handing_over_[r.key] = r.location.value;
    releasing_bytes_ += f.bytes;  // charged until its unlink completes
    add(r.key, parents[i], buckets[i], r.tail_page_count,
        r.row == RowPresence::kPresent && f.has_row, f, r.location.value);
  }
  op.handover = std::move(handover);
  demoting_ = demoting_ || demote.has_value();
  Start(std::move(op));
}

void DiskFiles::FinishHandover(DiskOperation& op) {
  DiskHandover& h = *op.handover;
  if (h.demotion) {
    demoting_ = false;
    Unpin(h.pinned);
    // Nothing was removed: the chain is offered once and stays held, each
    // record awaiting the sink's outcome; a failed read gives it up.
    const bool offered = op.status.ok() && eviction_sink_ != nullptr;
    if (offered) {
      std::vector<RecordView> chain;
      for (const HandoverRecord& r : h.records) chain.push_back(r.View());
      eviction_sink_->OnDemoted(chain);
    } else if (!op.status.ok()) {
      spdlog::warn("disk tier: reading record {} to demote it to the pool failed ({}); it stays",
                   op.failed_key.ToFileStem(), op.status.ToString());
    }
    for (const HandoverRecord& r : h.records) {
      std::optional<IndexEntry> e = index_.Find(r.key);
      auto f = e ? files_.find(e->location.value) : files_.end();
      if (f == files_.end()) continue;
      f->second.demotion = offered ? File::Demotion::kOffered : File::Demotion::kGivenUp;
      if (offered) awaiting_demotion_.insert(r.key);
    }
    return;
  }
  if (op.status.ok() && eviction_sink_ != nullptr) {
    // One offer per evicted record, each after what lies above it.
    std::vector<RecordView> chain;
    for (const HandoverRecord& r : h.records) {
      chain.push_back(r.View());
      if (r.evicted_file) eviction_sink_->OnEvicted(chain);
    }
  } else if (!op.status.ok()) {
    ++stats_.disk.dropped_io_total;
    spdlog::warn("disk tier: reading evicted record {} for the pool failed ({}); it is dropped",
                 op.failed_key.ToFileStem(), op.status.ToString());
  }
  Unpin(h.pinned);
  for (const HandoverRecord& r : h.records) {
    if (!r.evicted_file) continue;
    handing_over_.erase(r.key);
    releasing_bytes_ -= files_.at(*r.evicted_file).bytes;
    Unlink(r.key, *r.evicted_file);
  }
}

}  // namespace strata
