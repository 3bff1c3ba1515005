// RecordLayout: where each plane of each page and each rank's row sit inside a
// page record and the row segment. The same layout is used in host slabs and
// in record files (docs/formats.md, "Page records and rows"):
//
//   page record  = for each rank, for each page plane in geometry order:
//                  unit_bytes of the plane, padded to 4 KiB
//   row segment  = for each rank: the row's unit_bytes, padded to 4 KiB
//
// A replicated page record (every rank's page bytes identical) stores one
// share: rank 0's planes only; a replicated row segment stores rank 0's row.
// Pure arithmetic; immutable after construction.
#pragma once

#include <cstdint>
#include <vector>

#include "store/record/geometry.h"

namespace strata {

inline constexpr uint64_t kRecordAlign = 4096;
constexpr uint64_t AlignUp(uint64_t v, uint64_t a = kRecordAlign) { return (v + a - 1) / a * a; }

class RecordLayout {
 public:
  explicit RecordLayout(const CacheGeometry& geometry);

  uint32_t rank_count() const { return static_cast<uint32_t>(rank_page_offset_.size()); }
  uint32_t plane_count(uint32_t rank) const {
    return static_cast<uint32_t>(plane_offset_[rank].size());
  }
  // Unpadded bytes of one page of `plane` on `rank`.
  uint64_t plane_bytes(uint32_t rank, uint32_t plane) const { return plane_bytes_[rank][plane]; }
  uint64_t row_bytes(uint32_t rank) const { return row_bytes_[rank]; }

  // Offset of rank `rank`'s plane `plane` inside a page record (per-rank layout).
  uint64_t plane_offset(uint32_t rank, uint32_t plane) const {
    return rank_page_offset_[rank] + plane_offset_[rank][plane];
  }
  // Padded bytes of one rank's share of a page record.
  uint64_t rank_page_share(uint32_t rank) const { return rank_page_share_[rank]; }
  // Padded bytes of a page record holding every rank (per-rank layout).
  uint64_t page_record_bytes() const { return page_record_bytes_; }
  // Padded bytes of a replicated page record (rank 0's share only).
  uint64_t replicated_page_record_bytes() const { return rank_page_share_[0]; }
  uint64_t stored_page_record_bytes(bool replicated) const {
    return replicated ? replicated_page_record_bytes() : page_record_bytes();
  }

  // Offset of `rank`'s row inside the row segment (per-rank layout).
  uint64_t row_offset(uint32_t rank) const { return row_offset_[rank]; }
  // Padded bytes of every rank's row (per-rank layout).
  uint64_t row_segment_bytes() const { return row_segment_bytes_; }
  uint64_t replicated_row_segment_bytes() const { return AlignUp(row_bytes_[0]); }
  uint64_t stored_row_segment_bytes(bool replicated) const {
    return replicated ? replicated_row_segment_bytes() : row_segment_bytes();
  }

  // Whether all ranks have the same page (resp. row) geometry, the precondition
  // for storing a replicated share.
  bool pages_can_replicate() const { return pages_can_replicate_; }
  bool rows_can_replicate() const { return rows_can_replicate_; }

 private:
  std::vector<std::vector<uint64_t>> plane_bytes_;
  std::vector<std::vector<uint64_t>> plane_offset_;  // within the rank's share
  std::vector<uint64_t> rank_page_offset_;
  std::vector<uint64_t> rank_page_share_;
  std::vector<uint64_t> row_bytes_;
  std::vector<uint64_t> row_offset_;
  uint64_t page_record_bytes_ = 0;
  uint64_t row_segment_bytes_ = 0;
  bool pages_can_replicate_ = true;
  bool rows_can_replicate_ = true;
};

}  // namespace strata
