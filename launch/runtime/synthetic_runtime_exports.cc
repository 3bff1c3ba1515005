// SyntheticRuntime's side of the export and eviction hooks (seed 2.15,
// "Exports", "Headroom", "Evictions"; docs/embedding.md section 5).
#include <algorithm>

#include "launch/runtime/synthetic_runtime.h"

namespace strata {

HostStore& SyntheticRuntime::StoreCall() {
  STRATA_ASSERT(store_ != nullptr, "a store call without a store");
  if (!evictions_.idle()) {
    EvictionNoticeQueue::Batch batch = evictions_.Take();
    if (batch.lost) {
      store_->EvictionsLost();
      ++stats_.evictions_lost;
    }
    if (!batch.notices.empty()) store_->Evicted(batch.notices);
  }
  return *store_;
}

HeadroomInputs SyntheticRuntime::Headroom(const PrefixKey& key) const {
  std::vector<CachedCheckpoint> cache;
  cache.reserve(nodes_.size());
  std::unordered_map<PrefixKey, size_t> index;
  for (const auto& [k, n] : nodes_) {
    index.emplace(k, cache.size());
    cache.push_back({.parent = std::nullopt, .pages = n.tail.size(), .pinned = n.pins != 0});
  }
  for (const auto& [k, n] : nodes_) {
    if (n.parent) cache[index.at(k)].parent = index.at(*n.parent);
  }
  // The next step: a turn as large as the largest so far, and its row.
  return HeadroomInputs{
      .free = {.pages = free_pages_.size(), .rows = free_rows_.size()},
      .reclaimable = ReclaimableIfPinned(cache, index.at(key)),
      .next_step = {.pages = next_step_pages_, .rows = 1},
  };
}

void SyntheticRuntime::AnswerExport(const StoreEvent& request) {
  auto node = nodes_.find(request.key);
  ExportCheck check{.held_generation = std::nullopt,
                    .requested_generation = request.generation,
                    .chain_pages = 0,
                    .start_page = request.start_page,
                    .headroom = {}};
  std::vector<PageId> chain;
  if (node != nodes_.end()) {
    check.held_generation = node->second.generation;
    if (*check.held_generation == request.generation) {
      chain = Chain(request.key);
      check.chain_pages = chain.size();
      if (request.start_page <= chain.size()) check.headroom = Headroom(request.key);
    }
  }
  std::optional<ExportRefusal> refusal = CheckExport(check);
  // An id pinned already breaks the store's contract; refusing keeps the
  // first pin's single release intact.
  if (!refusal && !export_pins_.Record(request.export_id,
                                       {.key = request.key, .generation = request.generation})) {
    refusal = ExportRefusal::kNotFound;
  }
  if (refusal) {
    ++stats_.exports_refused[static_cast<size_t>(*refusal)];
    StoreCall().ExportRefused(request.export_id, *refusal);
    return;
  }
  // Pinned before the store hears of it; eviction runs on this thread only.
  Node& n = node->second;
  ++n.pins;
  ++stats_.exports_pinned;
  ExportDescription description{
      .start_page = request.start_page,
      .pages = {chain.begin() + static_cast<std::ptrdiff_t>(request.start_page), chain.end()},
      .row_slot = n.row};
  StoreCall().ExportPinned(request.export_id, description);
}

void SyntheticRuntime::EndExport(ExportId export_id) {
  std::optional<PinnedExport> ended = export_pins_.End(export_id);
  if (!ended) return;  // a second end (or one never pinned) finds nothing
  auto node = nodes_.find(ended->key);
  STRATA_ASSERT(node != nodes_.end() && node->second.generation == ended->generation &&
                    node->second.pins != 0,
                "an export's pinned checkpoint left the GPU cache");
  --node->second.pins;
  ++stats_.exports_ended;
}

std::vector<GpuCheckpointInfo> SyntheticRuntime::ListGpuCheckpoints() const {
  std::vector<GpuCheckpointInfo> out;
  out.reserve(nodes_.size());
  for (const auto& [key, n] : nodes_) {
    out.push_back({.key = key,
                   .generation = n.generation,
                   .chain_pages = key.consumed / page_tokens_,
                   .pins = n.pins});
  }
  std::sort(out.begin(), out.end(), [](const GpuCheckpointInfo& a, const GpuCheckpointInfo& b) {
    return a.generation < b.generation;
  });
  return out;
}

}  // namespace strata
