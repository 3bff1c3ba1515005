#include "launch/runtime/memfd_planes.h"

namespace strata {

Result<std::unique_ptr<MemfdPlanes>> MemfdPlanes::Create(const RankGeometry& rank,
                                                         uint32_t page_tokens) {
  std::unique_ptr<MemfdPlanes> p(
      new MemfdPlanes(CacheGeometry{.page_tokens = page_tokens, .ranks = {rank}}));
  std::vector<SizedAllocation> allocations;
  for (const PlaneSpec& plane : rank.page_planes) {
    allocations.push_back({.name = plane.name,
                           .group = AllocationGroup::kKvPages,
                           .unit_bytes = plane.unit_bytes,
                           .count = rank.page_count});
  }
  allocations.push_back({.name = rank.row.name,
                         .group = AllocationGroup::kStateRows,
                         .unit_bytes = rank.row.unit_bytes,
                         .count = rank.row_count});
  std::vector<uint8_t*> page_bases;
  uint8_t* row_base = nullptr;
  for (const SizedAllocation& a : allocations) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<attach::MemfdRegion> region,
                            attach::MemfdRegion::Create(a.name, a.unit_bytes * a.count));
    if (a.group == AllocationGroup::kKvPages) {
      page_bases.push_back(region->data());
    } else {
      row_base = region->data();
    }
    p->shared_.push_back({.allocation = a, .fd = region->fd()});
    p->regions_.push_back(std::move(region));
  }
  p->SetBases({std::move(page_bases)}, {row_base});
  return p;
}

std::vector<std::vector<attach::SharedAllocation>> MemfdPlanes::Shared() const { return {shared_}; }

}  // namespace strata
