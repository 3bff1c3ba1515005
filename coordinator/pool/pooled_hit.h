// The hit a pool lookup answers, sized before anything is claimed (seed
// 2.15, "Claims"): admission hands the runtime a HostHit for the pooled
// chain, the runtime reserves that many inbound pages, and the claim runs
// inside the Fetch that follows (PooledStore), never inside admission. Pure:
// no I/O, no clock.
#pragma once

#include <cstdint>
#include <functional>
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

// Whether the landing tier holds a ready record `key` (RecordIntake::Holds):
// a claimed record whose parent it holds lands on it.
using LandingHolds = std::function<bool(const PrefixKey&)>;

// The HostHit restoring pooled `chain` above `resident_tokens`, in the form
// the landing tier's Fetch takes once the claimed records are imported there.
// The manager answers the chain from its root, so the records the GPU already
// holds come with it: the hit starts after the deepest of those that
// `landing_holds` says the landing tier holds (or at the chain's first), so
// that every claimed record lands on a parent the tier holds, and it skips
// the pages at or below `resident_tokens`, as PrefixIndex computes them:
//   skip_pages = resident / page_tokens - base / page_tokens
//   pages      = sum(tail_pages from the start) - skip_pages
// where `base` is the consumed tokens of the start's parent. Its `chain` is
// the records to claim. Nullopt when the answer cannot size this admission:
// an empty chain, a tail count that differs from the keys, zero page tokens,
// an endpoint at or below `resident_tokens`, a resident count below the
// chain's base, a chain that starts above a base the landing tier cannot be
// shown to hold (a nonzero `base_consumed`: the answer names no parent key),
// or more pages skipped than the chain holds. The hit's tier is `landing`,
// the tier the claimed records land in and the restore reads: kMemory where
// claims land in DRAM, kDisk with ranks in separate processes.
std::optional<HostHit> PooledHitOf(const std::vector<PrefixKey>& chain, const ChainSizes& sizes,
                                   uint64_t resident_tokens, uint32_t page_tokens,
                                   HitRecordBytes record_bytes, Tier landing,
                                   const LandingHolds& landing_holds);

}  // namespace strata::pool
