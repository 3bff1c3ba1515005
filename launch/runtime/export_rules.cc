#include "launch/runtime/export_rules.h"

#include <vector>

namespace strata {

PagesAndRows ReclaimableIfPinned(std::span<const CachedCheckpoint> cache, size_t pinned) {
  // Blocked: pinned, or an ancestor of something pinned (never a leaf while
  // that pin holds). Each walk stops at the first node already blocked.
  std::vector<bool> blocked(cache.size(), false);
  auto block_upwards = [&](size_t i) {
    for (std::optional<size_t> at = i; at && !blocked[*at]; at = cache[*at].parent) {
      blocked[*at] = true;
    }
  };
  for (size_t i = 0; i < cache.size(); ++i) {
    if (cache[i].pinned || i == pinned) block_upwards(i);
  }
  PagesAndRows out;
  for (size_t i = 0; i < cache.size(); ++i) {
    if (blocked[i]) continue;
    out.pages += cache[i].pages;
    ++out.rows;
  }
  return out;
}

bool ExportFits(const HeadroomInputs& in) {
  return in.free.pages + in.reclaimable.pages >= in.next_step.pages &&
         in.free.rows + in.reclaimable.rows >= in.next_step.rows;
}

std::optional<ExportRefusal> CheckExport(const ExportCheck& check) {
  if (!check.held_generation) return ExportRefusal::kNotFound;
  if (*check.held_generation != check.requested_generation) {
    return ExportRefusal::kGenerationChanged;
  }
  if (check.start_page > check.chain_pages) return ExportRefusal::kChainGap;
  if (!ExportFits(check.headroom)) return ExportRefusal::kNoHeadroom;
  return std::nullopt;
}

}  // namespace strata
