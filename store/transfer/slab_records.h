// SlabRecords: records held in slab slots (seed 2.5) — each record's page
// records (or packed page shares), its row pieces, its replicated decisions,
// and the users whose transfers keep its slots alive after the record leaves
// its tier. The memory store keeps its records here, and so does the
// composite store's memory tier; neither owns slot memory any other way.
//
// Layout of a record in slots: per-rank page records one per slot; packed
// pages hold R shares per slot (share i at slot i / R, offset (i % R) * S);
// the row segment (per-rank, or rank 0's share when packed) over as many
// slots as it needs, in order.
//
// Thread: the owning store's thread. Never blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "store/disk/disk_thread.h"
#include "store/record/geometry.h"
#include "store/record/record_layout.h"
#include "store/tier/host_store.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/transfer_plan.h"

namespace strata {

// How a record is stored: its page count and which shares are replicated.
struct SlabShape {
  uint64_t pages = 0;
  bool with_row = true;
  bool replicated_pages = false;
  bool replicated_row = false;
};

class SlabRecords {
 public:
  struct Record {
    std::vector<SlotId> page_slots;
    std::vector<uint8_t*> pages;  // one page record (or packed share) per page
    std::vector<SlotId> row_slots;
    bool replicated_pages = false;
    bool replicated_row = false;
    uint32_t users = 0;    // transfers or disk jobs reading or writing its slots
    bool removed = false;  // left its tier; slots free when users reach 0

    bool has_row() const { return !row_slots.empty(); }
    uint64_t slots() const { return page_slots.size() + row_slots.size(); }
  };

  SlabRecords(const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool);

  const RecordLayout& layout() const { return layout_; }
  SlabPool& pool() const { return *pool_; }
  // Slots a record of `shape` occupies.
  uint64_t SlotsFor(const SlabShape& shape) const;
  // A record over `slots` (exactly SlotsFor(shape) of them), with one user.
  uint64_t Add(std::vector<SlotId> slots, const SlabShape& shape);

  bool contains(uint64_t id) const { return records_.count(id) != 0; }
  const Record& at(uint64_t id) const { return records_.at(id); }
  size_t size() const { return records_.size(); }
  // Slots held by every record, including removed ones still in use.
  uint64_t held_slots() const { return held_slots_; }
  // Unpadded page bytes (all ranks) of records not removed.
  uint64_t held_bytes() const { return held_bytes_; }

  void Use(uint64_t id) { ++records_.at(id).users; }
  // Drops one user; frees the slots of a removed record once it has none.
  void Release(uint64_t id);
  // The record left its tier: its slots are freed now, or at its last Release.
  void Remove(uint64_t id);
  // Frees the row slots; returns how many. No transfer may be reading them
  // (the index never drops the row of a pinned record).
  uint64_t DropRow(uint64_t id);
  // After copy-out (TP > 1): packs byte-identical rank shares into the
  // record's first slots and frees the rest. Returns whether anything packed.
  bool Pack(uint64_t id);

  // Copy-out of device `page_ids` (one per record page) and `row_slot` into
  // the record (per-rank layout).
  std::vector<TransferJob> PlanCopyOut(uint64_t id, const std::vector<PageId>& page_ids,
                                       StateSlot row_slot) const;
  // Restore of the chain `ids` (ascending) into `ticket`, skipping the chain's
  // first `skip_pages` pages; the row comes from the last record.
  // kNotFound if it lost its row; kFailedPrecondition if the pages disagree.
  Result<std::vector<TransferJob>> PlanRestore(const std::vector<uint64_t>& ids,
                                               uint64_t skip_pages,
                                               const InboundTicket& ticket) const;

  // The record in its stored (file) layout, for writing it to or reading it
  // from a record file: one piece per stored page record, and the stored row
  // segment (empty without a row).
  std::vector<IoPiece> PageIo(uint64_t id) const;
  std::vector<IoPiece> RowIo(uint64_t id) const;

 private:
  std::vector<HostPiece> RowPieces(const Record& r) const;
  void Free(uint64_t id);

  RecordLayout layout_;
  std::shared_ptr<SlabPool> pool_;
  uint64_t page_bytes_all_ranks_ = 0;  // unpadded
  std::unordered_map<uint64_t, Record> records_;
  uint64_t next_id_ = 1;
  uint64_t held_slots_ = 0;
  uint64_t held_bytes_ = 0;
};

}  // namespace strata
