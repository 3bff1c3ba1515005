// Which source restores a request (seed 2.15, "One source"), as pure logic.
// Every tier that has a usable match offers its lookup hit; the longest
// matching prefix wins, then the closest tier in the fixed copy priority:
// host DRAM, host NVMe, then the pool. The whole suffix after the GPU-resident
// prefix, endpoint row included, comes from that one source. An export (a
// neighbour's planes, seed 2.15's first source) ranks with the pool here:
// it is relayed through the manager's slots and lands in host memory before
// the restore, so a local copy of the same prefix is never slower (the
// seed's neighbour-GPU-first order assumes device-to-device copies, which
// are not built). Measured costs refine InboundPolicy's rates (the pool's
// among them), never this order.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "store/index/index_types.h"

namespace strata::pool {

// Closest first: the enum order is the copy priority.
enum class SourceTier : uint8_t { kHostDram, kHostNvme, kPool };
std::string_view SourceTierName(SourceTier tier);

struct SourceCandidate {
  SourceTier tier = SourceTier::kHostDram;
  LookupHit hit;  // its chain is non-empty
};

// The index of the chosen candidate, or nullopt when there is none (recompute).
std::optional<size_t> ChooseSource(std::span<const SourceCandidate> candidates);

// After a failed pool restore (once its writes drained): a local candidate with
// the same endpoint key, closest tier first; nullopt means recompute.
std::optional<size_t> FallbackAfterPoolFailure(std::span<const SourceCandidate> candidates,
                                               const PrefixKey& endpoint);

}  // namespace strata::pool
