#include "store/record/geometry.h"

#include <algorithm>
#include <set>

namespace strata {

uint64_t RankGeometry::page_bytes() const {
  uint64_t total = 0;
  for (const PlaneSpec& p : page_planes) total += p.unit_bytes;
  return total;
}

Result<RankGeometry> RankGeometryFromAllocations(std::span<const SizedAllocation> allocations) {
  RankGeometry g;
  bool have_row = false;
  bool have_page_count = false;
  std::set<std::string> names;
  for (const SizedAllocation& a : allocations) {
    if (a.owner == MemoryOwner::kPeer) continue;
    if (a.name.empty()) return Status::InvalidArgument("allocation with an empty name");
    if (!names.insert(a.name).second) {
      return Status::InvalidArgument("allocation '" + a.name + "' is listed twice");
    }
    if (a.unit_bytes == 0) {
      return Status::InvalidArgument("allocation '" + a.name + "' has zero unit bytes");
    }
    if (a.count == 0) return Status::InvalidArgument("allocation '" + a.name + "' has zero units");
    if (a.group == AllocationGroup::kStateRows) {
      if (have_row) {
        return Status::InvalidArgument("second state-row allocation '" + a.name +
                                       "' (row plane is '" + g.row.name + "')");
      }
      have_row = true;
      g.row = {a.name, a.unit_bytes};
      g.row_count = a.count;
      continue;
    }
    if (have_page_count && a.count != g.page_count) {
      return Status::InvalidArgument("page plane '" + a.name + "' has " + std::to_string(a.count) +
                                     " pages, other planes have " + std::to_string(g.page_count));
    }
    have_page_count = true;
    g.page_count = a.count;
    g.page_planes.push_back({a.name, a.unit_bytes});
  }
  if (!have_row) return Status::InvalidArgument("no local state-row allocation");
  if (g.page_planes.empty()) return Status::InvalidArgument("no local page-plane allocation");
  std::sort(g.page_planes.begin(), g.page_planes.end(),
            [](const PlaneSpec& a, const PlaneSpec& b) { return a.name < b.name; });
  return g;
}

Status ValidateGeometry(const CacheGeometry& geometry) {
  if (geometry.page_tokens == 0) return Status::InvalidArgument("page_tokens must be positive");
  if (geometry.ranks.empty()) return Status::InvalidArgument("geometry has no ranks");
  for (size_t r = 0; r < geometry.ranks.size(); ++r) {
    const RankGeometry& g = geometry.ranks[r];
    std::string where = "rank " + std::to_string(r);
    if (g.row.unit_bytes == 0) return Status::InvalidArgument(where + ": row plane has zero bytes");
    if (g.page_planes.empty()) return Status::InvalidArgument(where + ": no page planes");
    for (const PlaneSpec& p : g.page_planes) {
      if (p.unit_bytes == 0) {
        return Status::InvalidArgument(where + ": page plane '" + p.name + "' has zero bytes");
      }
    }
  }
  return Status::Ok();
}

}  // namespace strata
