// What every store does the same way with its index's answers and its
// outcomes: turning a LookupHit into the HostHit the runtime sees, and
// counting outcomes and hits in StoreStats, unpinning. Pure.
#pragma once

#include "store/index/index.h"
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

// Unpins each of `keys` in `index` (a key not pinned is skipped) and hands
// every row the index dropped meanwhile (a deferred compaction) to
// `on_row_drop(const std::optional<RowDrop>&)`.
template <typename OnRowDrop>
void UnpinEach(PrefixIndex& index, const std::vector<PrefixKey>& keys, OnRowDrop on_row_drop) {
  for (const PrefixKey& k : keys) {
    Result<std::optional<RowDrop>> r = index.Unpin(k);
    if (r.ok()) on_row_drop(*r);
  }
}

}  // namespace strata
