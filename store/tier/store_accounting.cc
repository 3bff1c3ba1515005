#include "store/tier/store_accounting.h"

namespace strata {

HostHit MakeHostHit(const LookupHit& hit, uint64_t resident_tokens, uint64_t page_bytes,
                    uint64_t row_bytes, Tier tier) {
  HostHit h;
  h.endpoint = hit.endpoint();
  h.chain.reserve(hit.chain.size());
  for (const ChainLink& l : hit.chain) h.chain.push_back(l.key);
  h.skip_pages = hit.skip_pages;
  h.pages = hit.restore_page_count();
  h.bytes = h.pages * page_bytes + row_bytes;
  h.tokens_gained = h.endpoint.consumed - resident_tokens;
  h.tier = tier;
  return h;
}

void CountHit(StoreStats& stats, const HostHit& hit) {
  ++stats.hits;
  stats.reused_tokens += hit.tokens_gained;
}

StoreOutcome CountOutcome(StoreStats& stats, StoreOutcome outcome) {
  switch (outcome) {
    case StoreOutcome::kQueued: ++stats.store_queued; break;
    case StoreOutcome::kPresent: ++stats.store_present; break;
    case StoreOutcome::kDeferred: ++stats.store_deferred; break;
    case StoreOutcome::kRetry: ++stats.store_retry; break;
    case StoreOutcome::kOversize: ++stats.store_oversize; break;
    case StoreOutcome::kDisabled: break;
  }
  return outcome;
}

}  // namespace strata
