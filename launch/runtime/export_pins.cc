#include "launch/runtime/export_pins.h"

namespace strata {

bool ExportPins::Record(ExportId export_id, const PinnedExport& pinned) {
  return pins_.emplace(export_id, pinned).second;
}

std::optional<PinnedExport> ExportPins::End(ExportId export_id) {
  auto it = pins_.find(export_id);
  if (it == pins_.end()) return std::nullopt;
  PinnedExport out = it->second;
  pins_.erase(it);
  return out;
}

size_t ExportPins::count(const PrefixKey& key) const {
  size_t n = 0;
  for (const auto& [id, p] : pins_) n += p.key == key ? 1 : 0;
  return n;
}

}  // namespace strata
