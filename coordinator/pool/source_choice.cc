#include "coordinator/pool/source_choice.h"

namespace strata::pool {

std::string_view SourceTierName(SourceTier tier) {
  switch (tier) {
    case SourceTier::kHostDram: return "dram";
    case SourceTier::kHostNvme: return "nvme";
    case SourceTier::kPool: return "pool";
  }
  return "unknown";
}

std::optional<size_t> ChooseSource(std::span<const SourceCandidate> candidates) {
  std::optional<size_t> best;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const SourceCandidate& c = candidates[i];
    if (c.hit.chain.empty()) continue;
    if (!best.has_value()) {
      best = i;
      continue;
    }
    const SourceCandidate& b = candidates[*best];
    const uint64_t c_len = c.hit.endpoint().consumed;
    const uint64_t b_len = b.hit.endpoint().consumed;
    if (c_len > b_len || (c_len == b_len && c.tier < b.tier)) best = i;
  }
  return best;
}

std::optional<size_t> FallbackAfterPoolFailure(std::span<const SourceCandidate> candidates,
                                               const PrefixKey& endpoint) {
  std::optional<size_t> best;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const SourceCandidate& c = candidates[i];
    if (c.tier == SourceTier::kPool || c.hit.chain.empty()) continue;
    if (c.hit.endpoint() != endpoint) continue;
    if (!best.has_value() || c.tier < candidates[*best].tier) best = i;
  }
  return best;
}

}  // namespace strata::pool
