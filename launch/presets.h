// Synthetic model geometries: shapes like real models' KV layouts, used by the
// demo, the synthetic runtime, tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/record/geometry.h"

namespace strata {

struct GeometryPreset {
  std::string_view name;
  std::string_view description;
};

// Every preset whose records fit the record file format, in a fixed order;
// "llama70b-tp8" (160 planes) is reachable by name only.
const std::vector<GeometryPreset>& GeometryPresets();

// The sized allocations one rank of preset `name` declares, including one peer
// allocation (another rank's memory) that geometry building must skip.
Result<std::vector<SizedAllocation>> PresetAllocations(std::string_view name, uint64_t page_count,
                                                       uint64_t row_count);
// The page size of preset `name` in tokens.
Result<uint32_t> PresetPageTokens(std::string_view name);
// A geometry of `rank_count` identical ranks of preset `name`.
Result<CacheGeometry> PresetGeometry(std::string_view name, uint32_t rank_count,
                                     uint64_t page_count, uint64_t row_count);

}  // namespace strata
