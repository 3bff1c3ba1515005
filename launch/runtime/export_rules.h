// The synthetic runtime's answer to an export request (seed 2.15, "Exports"
// and "Headroom"), as pure functions: no threads, sockets, clock reads or
// store calls. SyntheticRuntime fills the inputs from its GPU cache.
//
// The checks run in the seed's order: the checkpoint by key (kNotFound) and
// generation (kGenerationChanged), the chain from the requested page
// (kChainGap), then headroom (kNoHeadroom).
//
// Headroom rule: with the checkpoint pinned, the free pages and rows plus
// what eviction could still reclaim must cover the runtime's next step. The
// cache evicts leaves first and never a pinned checkpoint, so a checkpoint
// is reclaimable exactly when neither it nor any descendant is pinned; the
// export's checkpoint counts as pinned, so its ancestors stay too. Each
// reclaimable checkpoint frees its own pages (its tail) and its row.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "store/tier/export_hooks.h"

namespace strata {

// One checkpoint of the GPU cache, as the headroom rule sees it.
struct CachedCheckpoint {
  std::optional<size_t> parent;  // index of its GPU parent in the same span
  uint64_t pages = 0;            // pages only it holds (its tail)
  bool pinned = false;           // a publication, restore or export holds it
};

struct PagesAndRows {
  uint64_t pages = 0;
  uint64_t rows = 0;
};

// What eviction could reclaim if `pinned` (an index into `cache`) were pinned
// too.
PagesAndRows ReclaimableIfPinned(std::span<const CachedCheckpoint> cache, size_t pinned);

struct HeadroomInputs {
  PagesAndRows free;         // free now
  PagesAndRows reclaimable;  // ReclaimableIfPinned for the export's checkpoint
  PagesAndRows next_step;    // what the runtime's next step reserves
};

bool ExportFits(const HeadroomInputs& in);

// What the runtime knows about a requested export.
struct ExportCheck {
  std::optional<uint64_t> held_generation;  // the checkpoint at the key; none: not held
  uint64_t requested_generation = 0;
  uint64_t chain_pages = 0;  // pages of the held checkpoint's chain, from the root
  uint64_t start_page = 0;   // the request's first page
  HeadroomInputs headroom;   // read only when the first three checks pass
};

// Why the export cannot be pinned, or nullopt: pin it. A start page equal to
// the chain's length exports the row alone; beyond it, nothing: kChainGap.
std::optional<ExportRefusal> CheckExport(const ExportCheck& check);

}  // namespace strata
