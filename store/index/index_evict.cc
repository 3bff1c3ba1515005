// PrefixIndex eviction, compaction and expiry: leaf-first, least recently
// used first, under the store's predicate.
#include "store/index/index.h"

namespace strata {

void PrefixIndex::RemoveWithPageOnlyAncestors(uint32_t idx, const Predicate& allowed,
                                              std::vector<RemovedRecord>& out) {
  uint32_t parent = nodes_[idx].parent();
  RemoveNode(idx, out);
  while (parent != kNil) {
    const Node& p = nodes_[parent];
    if (p.child_count != 0 || p.has_row() || p.pins != 0 || !allowed(EntryOf(parent))) return;
    uint32_t next = p.parent();
    RemoveNode(parent, out);
    parent = next;
  }
}

EvictionDecision PrefixIndex::EvictOne(const Predicate& evictable) {
  EvictionDecision decision;
  for (const auto& [tick, idx] : leaves_) {
    if (nodes_[idx].pins != 0 || !evictable(EntryOf(idx))) continue;
    RemoveWithPageOnlyAncestors(idx, evictable, decision.removed);
    return decision;
  }
  for (const auto& [tick, idx] : compactable_) {
    if (nodes_[idx].pins != 0 || !evictable(EntryOf(idx))) continue;
    decision.compacted = DropRow(idx);
    return decision;
  }
  return decision;
}

std::optional<IndexEntry> PrefixIndex::ColdestLeaf(const Predicate& allowed) const {
  for (const auto& [tick, idx] : leaves_) {
    if (nodes_[idx].pins == 0 && allowed(EntryOf(idx))) return EntryOf(idx);
  }
  return std::nullopt;
}

ExpirySweep PrefixIndex::Expire(uint64_t now_ms, uint64_t max_age_ms, const Predicate& droppable) {
  ExpirySweep sweep;
  if (last_sweep_ms_ && now_ms < *last_sweep_ms_ + kExpirySweepIntervalMs) return sweep;
  last_sweep_ms_ = now_ms;
  sweep.ran = true;
  // Leaves in access order as they stand at each step: an ancestor that an
  // expiry leaves as a row-bearing leaf is visited if it is younger in access
  // order than the leaf that went.
  auto it = leaves_.begin();
  while (it != leaves_.end() && sweep.expired_leaves < kExpiredLeavesPerSweep) {
    const uint64_t tick = it->first;
    const uint32_t idx = it->second;
    const Node& n = nodes_[idx];
    if (n.pins != 0 || !droppable(EntryOf(idx))) {
      ++it;
      continue;
    }
    if (now_ms < n.last_use_ms || now_ms - n.last_use_ms < max_age_ms) break;
    RemoveWithPageOnlyAncestors(idx, droppable, sweep.removed);
    ++sweep.expired_leaves;
    it = leaves_.upper_bound(tick);
  }
  return sweep;
}

}  // namespace strata
