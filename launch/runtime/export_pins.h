// ExportPins: the runtime's map from export to the checkpoint it pinned for
// it (seed 2.15, "Exports"). Pure bookkeeping: the caller pins and unpins the
// checkpoint itself, once when Record succeeds and once when End returns an
// entry, so pins and releases balance and none is released twice.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>

#include "store/tier/export_hooks.h"

namespace strata {

struct PinnedExport {
  PrefixKey key;
  uint64_t generation = 0;
};

class ExportPins {
 public:
  // Records `export_id` → `pinned`; false (nothing recorded) if the id is
  // recorded already.
  [[nodiscard]] bool Record(ExportId export_id, const PinnedExport& pinned);
  // Removes and returns the export's entry; nullopt if it has none (never
  // pinned, or ended already: a second end finds nothing).
  [[nodiscard]] std::optional<PinnedExport> End(ExportId export_id);

  size_t size() const { return pins_.size(); }
  // Exports pinning `key`.
  size_t count(const PrefixKey& key) const;

 private:
  std::unordered_map<ExportId, PinnedExport> pins_;
};

}  // namespace strata
