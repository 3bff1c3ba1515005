#include "store/transfer/device_planes.h"

#include <string>

namespace strata {

Status CheckPlaneAccess(const CacheGeometry& geometry, uint32_t rank, std::optional<uint32_t> plane,
                        uint64_t index, uint64_t bytes) {
  if (rank >= geometry.rank_count()) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + " out of range (" +
                                   std::to_string(geometry.rank_count()) + " ranks)");
  }
  const RankGeometry& g = geometry.ranks[rank];
  if (plane && *plane >= g.page_planes.size()) {
    return Status::InvalidArgument("plane " + std::to_string(*plane) + " out of range (" +
                                   std::to_string(g.page_planes.size()) + " planes)");
  }
  const uint64_t count = plane ? g.page_count : g.row_count;
  if (index >= count) {
    return Status::InvalidArgument(std::string(plane ? "page id " : "state slot ") +
                                   std::to_string(index) + " out of range (" +
                                   std::to_string(count) + ")");
  }
  const uint64_t unit = plane ? g.page_planes[*plane].unit_bytes : g.row.unit_bytes;
  if (bytes != unit) {
    return Status::InvalidArgument("buffer of " + std::to_string(bytes) + " bytes for a unit of " +
                                   std::to_string(unit));
  }
  return Status::Ok();
}

}  // namespace strata
