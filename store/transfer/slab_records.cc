#include "store/transfer/slab_records.h"

#include "store/transfer/replication.h"

namespace strata {

SlabRecords::SlabRecords(const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool)
    : layout_(geometry), pool_(std::move(pool)) {
  STRATA_ASSERT(pool_->slot_bytes() >= layout_.page_record_bytes(),
                "slab slots must hold a page record");
  for (const RankGeometry& g : geometry.ranks) page_bytes_all_ranks_ += g.page_bytes();
}

uint64_t SlabRecords::SlotsFor(const SlabShape& shape) const {
  const uint64_t ranks = layout_.rank_count();
  const uint64_t pages = shape.replicated_pages ? (shape.pages + ranks - 1) / ranks : shape.pages;
  const uint64_t row =
      shape.with_row
          ? RowSlots(layout_.stored_row_segment_bytes(shape.replicated_row), pool_->slot_bytes())
          : 0;
  return pages + row;
}

uint64_t SlabRecords::Add(std::vector<SlotId> slots, const SlabShape& shape) {
  STRATA_ASSERT(slots.size() == SlotsFor(shape), "a record takes exactly its slots");
  SlabShape pages_only = shape;
  pages_only.with_row = false;
  const auto page_slots = static_cast<std::ptrdiff_t>(SlotsFor(pages_only));
  Record r;
  r.page_slots.assign(slots.begin(), slots.begin() + page_slots);
  r.row_slots.assign(slots.begin() + page_slots, slots.end());
  r.replicated_pages = shape.replicated_pages;
  r.replicated_row = shape.replicated_row && shape.with_row;
  const uint64_t ranks = shape.replicated_pages ? layout_.rank_count() : 1;
  const uint64_t share = layout_.stored_page_record_bytes(shape.replicated_pages);
  for (uint64_t i = 0; i < shape.pages; ++i) {
    r.pages.push_back(pool_->address(r.page_slots[i / ranks]) + (i % ranks) * share);
  }
  r.users = 1;
  held_slots_ += slots.size();
  held_bytes_ += shape.pages * page_bytes_all_ranks_;
  const uint64_t id = next_id_++;
  records_.emplace(id, std::move(r));
  return id;
}

void SlabRecords::Free(uint64_t id) {
  auto it = records_.find(id);
  held_slots_ -= it->second.slots();
  pool_->Free(it->second.page_slots);
  pool_->Free(it->second.row_slots);
  records_.erase(it);
}

void SlabRecords::Release(uint64_t id) {
  Record& r = records_.at(id);
  STRATA_ASSERT(r.users > 0, "releasing a record nobody uses");
  if (--r.users == 0 && r.removed) Free(id);
}

void SlabRecords::Remove(uint64_t id) {
  Record& r = records_.at(id);
  if (r.removed) return;
  r.removed = true;
  held_bytes_ -= r.pages.size() * page_bytes_all_ranks_;
  if (r.users == 0) Free(id);
}

uint64_t SlabRecords::DropRow(uint64_t id) {
  Record& r = records_.at(id);
  const uint64_t n = r.row_slots.size();
  pool_->Free(r.row_slots);
  r.row_slots.clear();
  r.replicated_row = false;
  held_slots_ -= n;
  return n;
}

std::vector<HostPiece> SlabRecords::RowPieces(const Record& r) const {
  std::vector<HostPiece> pieces;
  for (SlotId s : r.row_slots) pieces.push_back({pool_->address(s), pool_->slot_bytes()});
  return pieces;
}

bool SlabRecords::Pack(uint64_t id) {
  if (layout_.rank_count() < 2) return false;
  Record& r = records_.at(id);
  const uint64_t before = r.slots();
  bool packed = false;
  if (layout_.pages_can_replicate() && !r.pages.empty() && !r.replicated_pages) {
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
  if (r.has_row() && !r.replicated_row && RowRanksIdentical(layout_, RowPieces(r))) {
    const uint64_t keep = RowSlots(layout_.replicated_row_segment_bytes(), pool_->slot_bytes());
    for (size_t i = keep; i < r.row_slots.size(); ++i) pool_->Free(r.row_slots[i]);
    r.row_slots.resize(keep);
    r.replicated_row = packed = true;
  }
  held_slots_ -= before - r.slots();
  return packed;
}

std::vector<TransferJob> SlabRecords::PlanCopyOut(uint64_t id, const std::vector<PageId>& page_ids,
                                                  StateSlot row_slot) const {
  const Record& r = records_.at(id);
  std::vector<HostPageSource> sources;
  for (uint8_t* p : r.pages) sources.push_back({p, false});
  std::optional<HostRowSource> row;
  if (r.has_row()) row = HostRowSource{RowPieces(r), false};
  return PlanTransfers(TransferDirection::kDeviceToHost, sources, page_ids, row, row_slot);
}

Result<std::vector<TransferJob>> SlabRecords::PlanRestore(const std::vector<uint64_t>& ids,
                                                          uint64_t skip_pages,
                                                          const InboundTicket& ticket) const {
  std::vector<HostPageSource> sources;
  for (uint64_t id : ids) {
    const Record& r = records_.at(id);
    for (uint8_t* p : r.pages) sources.push_back({p, r.replicated_pages});
  }
  const Record& end = records_.at(ids.back());
  if (!end.has_row()) return Status::NotFound("the chain's endpoint lost its row");
  if (sources.size() != skip_pages + ticket.page_ids.size()) {
    return Status::FailedPrecondition("chain holds " + std::to_string(sources.size()) +
                                      " pages, the restore wants " +
                                      std::to_string(skip_pages + ticket.page_ids.size()));
  }
  sources.erase(sources.begin(), sources.begin() + static_cast<std::ptrdiff_t>(skip_pages));
  return PlanTransfers(TransferDirection::kHostToDevice, sources, ticket.page_ids,
                       HostRowSource{RowPieces(end), end.replicated_row}, ticket.row_slot);
}

std::vector<IoPiece> SlabRecords::PageIo(uint64_t id) const {
  const Record& r = records_.at(id);
  const uint64_t bytes = layout_.stored_page_record_bytes(r.replicated_pages);
  std::vector<IoPiece> out;
  for (uint8_t* p : r.pages) out.push_back({reinterpret_cast<std::byte*>(p), bytes});
  return out;
}

std::vector<IoPiece> SlabRecords::RowIo(uint64_t id) const {
  const Record& r = records_.at(id);
  uint64_t left = r.has_row() ? layout_.stored_row_segment_bytes(r.replicated_row) : 0;
  std::vector<IoPiece> out;
  for (SlotId s : r.row_slots) {
    if (left == 0) break;
    const uint64_t n = std::min(left, pool_->slot_bytes());
    out.push_back({reinterpret_cast<std::byte*>(pool_->address(s)), n});
    left -= n;
  }
  return out;
}

}  // namespace strata
