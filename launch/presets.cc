#include "launch/presets.h"

namespace strata {

namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

struct PresetShape {
  GeometryPreset preset;
  uint32_t page_tokens;
  std::vector<std::pair<std::string, uint64_t>> planes;  // name, unit bytes
  uint64_t row_bytes;
  // Whether GeometryPresets() lists it: a preset whose planes overflow the
  // record header's rank table (llama70b-tp8: 160 planes) cannot be written
  // to record files, so it is reachable by name only (GPU benchmarks).
  bool listed = true;
};

std::vector<std::pair<std::string, uint64_t>> Layers(
    int layers, std::initializer_list<std::pair<const char*, uint64_t>> kinds) {
  std::vector<std::pair<std::string, uint64_t>> planes;
  for (int l = 0; l < layers; ++l) {
    for (const auto& [kind, bytes] : kinds) {
      char name[32];
      std::snprintf(name, sizeof name, "layer%02d.%s", l, kind);
      planes.emplace_back(name, bytes);
    }
  }
  return planes;
}

const std::vector<PresetShape>& Shapes() {
  static const std::vector<PresetShape> shapes = {
      {{"tiny", "2 layers of 4 KiB key/value planes, 64-token pages, 8 KiB row (tests)"},
       64,
       Layers(2, {{"key", 4 * kKiB}, {"value", 4 * kKiB}}),
       8 * kKiB},
      {{"qwen-like",
        "12 sparse-attention layers of key/value/selector planes (36 x 16 KiB), "
        "64-token pages, 3 MiB recurrent row"},
       64,
       Layers(12, {{"key", 16 * kKiB}, {"value", 16 * kKiB}, {"selector", 16 * kKiB}}),
       3 * kMiB},
      {{"deepseek-like",
        "8 latent layers of 288 KiB plus 8 index planes of 16 KiB, 64-token "
        "pages, 1 MiB row"},
       64,
       Layers(8, {{"latent", 288 * kKiB}, {"index", 16 * kKiB}}),
       1 * kMiB},
      {{"llama70b-tp8",
        "one rank of a 70B dense GQA model at tensor parallelism 8: 80 layers of key/value "
        "planes of 16 KiB (one KV head of 128 bf16 dims x 64 tokens), 64-token pages; the "
        "model has no state, the 4 KiB row is a stand-in the geometry requires"},
       64,
       Layers(80, {{"key", 16 * kKiB}, {"value", 16 * kKiB}}),
       4 * kKiB,
       /*listed=*/false},
      {{"small-planes",
        "48 planes of 4 KiB (many small index planes), 128-token pages, 256 KiB row"},
       128,
       Layers(48, {{"index", 4 * kKiB}}),
       256 * kKiB},
  };
  return shapes;
}

Result<const PresetShape*> FindShape(std::string_view name) {
  std::string known;
  for (const PresetShape& s : Shapes()) {
    if (s.preset.name == name) return &s;
    known += known.empty() ? "" : ", ";
    known += s.preset.name;
  }
  return Status::NotFound("unknown geometry preset '" + std::string(name) + "' (known: " + known +
                          ")");
}

}  // namespace

const std::vector<GeometryPreset>& GeometryPresets() {
  static const std::vector<GeometryPreset> presets = [] {
    std::vector<GeometryPreset> out;
    for (const PresetShape& s : Shapes()) {
      if (s.listed) out.push_back(s.preset);
    }
    return out;
  }();
  return presets;
}

Result<std::vector<SizedAllocation>> PresetAllocations(std::string_view name, uint64_t page_count,
                                                       uint64_t row_count) {
  STRATA_ASSIGN_OR_RETURN(const PresetShape* shape, FindShape(name));
  std::vector<SizedAllocation> out;
  out.push_back({"state.rows", AllocationGroup::kStateRows, shape->row_bytes, row_count,
                 MemoryOwner::kLocal});
  for (const auto& [plane, bytes] : shape->planes) {
    out.push_back({plane, AllocationGroup::kKvPages, bytes, page_count, MemoryOwner::kLocal});
  }
  // Another rank's shard of the embedding cache: never copied by this rank.
  out.push_back(
      {"peer.shard", AllocationGroup::kKvPages, 64 * kKiB, page_count, MemoryOwner::kPeer});
  return out;
}

Result<uint32_t> PresetPageTokens(std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(const PresetShape* shape, FindShape(name));
  return shape->page_tokens;
}

Result<CacheGeometry> PresetGeometry(std::string_view name, uint32_t rank_count,
                                     uint64_t page_count, uint64_t row_count) {
  if (rank_count == 0) return Status::InvalidArgument("rank count must be positive");
  STRATA_ASSIGN_OR_RETURN(auto allocations, PresetAllocations(name, page_count, row_count));
  STRATA_ASSIGN_OR_RETURN(RankGeometry rank, RankGeometryFromAllocations(allocations));
  CacheGeometry g;
  STRATA_ASSIGN_OR_RETURN(g.page_tokens, PresetPageTokens(name));
  g.ranks.assign(rank_count, rank);
  return g;
}

}  // namespace strata
