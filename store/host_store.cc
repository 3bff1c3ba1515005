#include "store/host_store.h"

namespace strata {

HostHit MakeHostHit(const LookupHit& hit, uint64_t resident_tokens, uint64_t page_bytes,
                    uint64_t row_bytes, Tier tier) {
  HostHit h;
  h.endpoint = hit.endpoint();
  for (const ChainLink& l : hit.chain) h.chain.push_back(l.key);
  h.skip_pages = hit.skip_pages;
  h.pages = hit.restore_page_count();
  h.bytes = h.pages * page_bytes + row_bytes;
  h.tokens_gained = h.endpoint.consumed - resident_tokens;
  h.tier = tier;
  return h;
}

}  // namespace strata
