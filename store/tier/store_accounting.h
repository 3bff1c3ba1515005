// What every store does the same way with its index's answers and its
// outcomes: turning a LookupHit into the HostHit the runtime sees, and
// counting outcomes and hits in StoreStats. Pure.
#pragma once

#include "store/index/index_types.h"
#include "store/tier/host_store.h"

namespace strata {

// The HostHit for `hit` above `resident_tokens`; `page_bytes` and `row_bytes`
// are unpadded bytes of one page and of the row, summed over every rank.
HostHit MakeHostHit(const LookupHit& hit, uint64_t resident_tokens, uint64_t page_bytes,
                    uint64_t row_bytes, Tier tier);

// Counts a hit (hits, reused tokens) in `stats`.
void CountHit(StoreStats& stats, const HostHit& hit);

// Counts `outcome` in `stats` and returns it.
StoreOutcome CountOutcome(StoreStats& stats, StoreOutcome outcome);

}  // namespace strata
