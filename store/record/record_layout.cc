#include "store/record/record_layout.h"

namespace strata {

RecordLayout::RecordLayout(const CacheGeometry& geometry) {
  const size_t ranks = geometry.ranks.size();
  plane_bytes_.resize(ranks);
  plane_offset_.resize(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    const RankGeometry& g = geometry.ranks[r];
    uint64_t share = 0;
    for (const PlaneSpec& p : g.page_planes) {
      plane_bytes_[r].push_back(p.unit_bytes);
      plane_offset_[r].push_back(share);
      share += AlignUp(p.unit_bytes);
    }
    rank_page_offset_.push_back(page_record_bytes_);
    rank_page_share_.push_back(share);
    page_record_bytes_ += share;
    row_bytes_.push_back(g.row.unit_bytes);
    row_offset_.push_back(row_segment_bytes_);
    row_segment_bytes_ += AlignUp(g.row.unit_bytes);
    if (r > 0) {
      pages_can_replicate_ = pages_can_replicate_ && plane_bytes_[r] == plane_bytes_[0];
      rows_can_replicate_ = rows_can_replicate_ && row_bytes_[r] == row_bytes_[0];
    }
  }
}

}  // namespace strata
