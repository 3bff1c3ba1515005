// CacheGeometry: which bytes make up a checkpoint on each rank (seed 2.1).
// A rank has one state-row plane (one row per state slot) and one or more page
// planes, all indexed by the same physical page id.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "store/base/status.h"

namespace strata {

// What an allocation holds, like the runtime's Sizing records.
enum class AllocationGroup : unsigned char { kKvPages, kStateRows };
// Whose memory an allocation is: kPeer allocations belong to another rank and
// are excluded, so each byte is copied once under tensor/context parallelism.
enum class MemoryOwner : unsigned char { kLocal, kPeer };

// One runtime-sized allocation of a rank.
struct SizedAllocation {
  std::string name;
  AllocationGroup group = AllocationGroup::kKvPages;
  uint64_t unit_bytes = 0;  // bytes per page (kKvPages) or per row (kStateRows)
  uint64_t count = 0;       // pages or rows in the allocation
  MemoryOwner owner = MemoryOwner::kLocal;
};

struct PlaneSpec {
  std::string name;
  uint64_t unit_bytes = 0;
  friend bool operator==(const PlaneSpec&, const PlaneSpec&) = default;
};

struct RankGeometry {
  PlaneSpec row;                       // the state-row plane
  std::vector<PlaneSpec> page_planes;  // sorted by name
  uint64_t row_count = 0;
  uint64_t page_count = 0;

  // Sum of the page planes' unit bytes: one page of this rank, unpadded.
  uint64_t page_bytes() const;
  friend bool operator==(const RankGeometry&, const RankGeometry&) = default;
};

struct CacheGeometry {
  uint32_t page_tokens = 0;         // tokens per physical page
  std::vector<RankGeometry> ranks;  // index = rank

  uint32_t rank_count() const { return static_cast<uint32_t>(ranks.size()); }
  friend bool operator==(const CacheGeometry&, const CacheGeometry&) = default;
};

// Builds a rank's geometry from its sized allocations, in any order: exactly
// one local kStateRows allocation, one or more local kKvPages allocations with
// one page count, unique names, nonzero sizes. Peer allocations are skipped.
// Page planes come out sorted by name. Errors name the offending allocation.
Result<RankGeometry> RankGeometryFromAllocations(std::span<const SizedAllocation> allocations);

// Validates a whole geometry: page_tokens > 0, at least one rank, every rank
// with a row plane and at least one page plane of nonzero unit size.
Status ValidateGeometry(const CacheGeometry& geometry);

}  // namespace strata
