#include "coordinator/pool/pooled_hit.h"

namespace strata::pool {

std::optional<HostHit> PooledHitOf(const std::vector<PrefixKey>& chain, const ChainSizes& sizes,
                                   uint64_t resident_tokens, uint32_t page_tokens,
                                   HitRecordBytes record_bytes, Tier landing,
                                   const LandingHolds& landing_holds) {
  if (chain.empty() || sizes.tail_pages.size() != chain.size() || page_tokens == 0) {
    return std::nullopt;
  }
  if (resident_tokens < sizes.base_consumed || resident_tokens >= chain.back().consumed) {
    return std::nullopt;
  }
  // The start: after the deepest GPU-held record the landing tier holds.
  size_t start = 0;
  for (size_t i = chain.size(); i-- > 0;) {
    if (chain[i].consumed <= resident_tokens && landing_holds && landing_holds(chain[i])) {
      start = i + 1;
      break;
    }
  }
  if (start == 0 && sizes.base_consumed != 0) return std::nullopt;
  const uint64_t base = start == 0 ? 0 : chain[start - 1].consumed;
  uint64_t total = 0;
  for (size_t i = start; i < chain.size(); ++i) total += sizes.tail_pages[i];
  const uint64_t skip = resident_tokens / page_tokens - base / page_tokens;
  if (skip > total) return std::nullopt;
  HostHit h;
  h.endpoint = chain.back();
  h.chain.assign(chain.begin() + static_cast<std::ptrdiff_t>(start), chain.end());
  h.skip_pages = skip;
  h.pages = total - skip;
  h.bytes = h.pages * record_bytes.page + record_bytes.row;
  h.pooled = true;
  h.tokens_gained = h.endpoint.consumed - resident_tokens;
  h.tier = landing;
  return h;
}

}  // namespace strata::pool
