#include "coordinator/pool/pooled_hit.h"

namespace strata::pool {

std::optional<HostHit> PooledHitOf(const std::vector<PrefixKey>& chain, const ChainSizes& sizes,
                                   uint64_t resident_tokens, uint32_t page_tokens,
                                   HitRecordBytes record_bytes, Tier landing) {
  if (chain.empty() || sizes.tail_pages.size() != chain.size() || page_tokens == 0) {
    return std::nullopt;
  }
  if (resident_tokens < sizes.base_consumed || resident_tokens >= chain.front().consumed) {
    return std::nullopt;
  }
  uint64_t total = 0;
  for (uint32_t tail : sizes.tail_pages) total += tail;
  const uint64_t skip = resident_tokens / page_tokens - sizes.base_consumed / page_tokens;
  if (skip > total) return std::nullopt;
  HostHit h;
  h.endpoint = chain.back();
  h.chain = chain;
  h.skip_pages = skip;
  h.pages = total - skip;
  h.bytes = h.pages * record_bytes.page + record_bytes.row;
  h.tokens_gained = h.endpoint.consumed - resident_tokens;
  h.tier = landing;
  return h;
}

}  // namespace strata::pool
