// The hit a pool lookup answers, sized before anything is claimed (seed
// 2.15, "Claims"): admission hands the runtime a HostHit for the pooled
// chain, the runtime reserves that many inbound pages, and the claim runs
// inside the Fetch that follows (PooledStore), never inside admission. Pure:
// no I/O, no clock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "store/base/prefix_key.h"
#include "store/tier/host_store.h"

namespace strata::pool {

// What the manager's lookup answer says of its chain's pages: the consumed
// tokens of the first record's parent (0: a root) and each record's tail
// pages, in chain order (one per key).
struct ChainSizes {
  uint64_t base_consumed = 0;
  std::vector<uint32_t> tail_pages;
};

// The bytes of one page record and of the row segment across the instance's
// ranks, as its landing tier stores them: what a hit's `bytes` counts.
struct HitRecordBytes {
  uint64_t page = 0;
  uint64_t row = 0;
};

// The HostHit restoring pooled `chain` above `resident_tokens`, exactly as
// the landing tier's own lookup will answer it once the chain is imported
// there (the same chain, skip and page count as PrefixIndex computes):
//   skip_pages = resident / page_tokens - base_consumed / page_tokens
//   pages      = sum(tail_pages) - skip_pages
// Nullopt when the answer cannot size this admission: an empty chain, a
// tail count that differs from the keys, zero page tokens, a resident
// count outside [base_consumed, first record), or more pages skipped than
// the chain holds. The hit's tier is `landing`, the tier the claimed
// records land in and the restore reads: kMemory where claims land in DRAM,
// kDisk with ranks in separate processes (they land on every rank's disk).
std::optional<HostHit> PooledHitOf(const std::vector<PrefixKey>& chain, const ChainSizes& sizes,
                                   uint64_t resident_tokens, uint32_t page_tokens,
                                   HitRecordBytes record_bytes, Tier landing);

}  // namespace strata::pool
