// `strata layout`: describe a synthetic geometry, its fingerprints, namespace
// identity and record directory name, and sample prefix keys.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <numeric>

#include "launch/commands.h"
#include "launch/presets.h"
#include "store/base/prefix_history.h"
#include "store/record/fingerprint.h"

namespace strata {

namespace {

struct LayoutOptions {
  std::string preset = "qwen-like";
  uint32_t ranks = 2;
  std::string model = "synthetic/qwen-like";
  std::string mode = "ordinary";
  bool list = false;
};

Result<StateMode> ParseStateMode(const std::string& text) {
  for (StateMode m :
       {StateMode::kOrdinary, StateMode::kLearnedSpeculation, StateMode::kCopySpeculation}) {
    if (StateModeName(m) == text) return m;
  }
  return Status::InvalidArgument("unknown state mode '" + text +
                                 "' (ordinary, learned-speculation, copy-speculation)");
}

int RunLayout(const LayoutOptions& o) {
  if (o.list) {
    for (const GeometryPreset& p : GeometryPresets()) {
      std::printf("%-14s %.*s\n", std::string(p.name).c_str(),
                  static_cast<int>(p.description.size()), p.description.data());
    }
    return 0;
  }
  Result<StateMode> mode = ParseStateMode(o.mode);
  if (!mode.ok()) {
    std::fprintf(stderr, "strata layout: %s\n", mode.status().ToString().c_str());
    return 2;
  }
  Result<CacheGeometry> g =
      PresetGeometry(o.preset, o.ranks, /*page_count=*/1024, /*row_count=*/64);
  if (!g.ok()) {
    std::fprintf(stderr, "strata layout: %s\n", g.status().ToString().c_str());
    return 2;
  }
  const RankGeometry& r0 = g->ranks[0];
  std::printf("preset %s: %u rank(s), %u tokens per page\n", o.preset.c_str(), g->rank_count(),
              g->page_tokens);
  std::printf("  per rank: %zu page planes, %llu page bytes, row plane '%s' of %llu bytes\n",
              r0.page_planes.size(), static_cast<unsigned long long>(r0.page_bytes()),
              r0.row.name.c_str(), static_cast<unsigned long long>(r0.row.unit_bytes));
  LayoutFingerprint whole = ComputeLayoutFingerprint(*g);
  NamespaceIdentity id = ComputeNamespaceIdentity(o.model, *mode);
  std::printf("layout fingerprint (one process): %s\n", ToHex(whole).c_str());
  for (uint32_t r = 0; r < g->rank_count(); ++r) {
    LayoutFingerprint fp =
        ComputeRankLayoutFingerprint(g->ranks[r], g->page_tokens, r, g->rank_count());
    std::printf("layout fingerprint (rank %u of %u on its own host): %s\n", r, g->rank_count(),
                ToHex(fp).c_str());
  }
  std::printf("namespace identity (%s, %s): %s\n", o.model.c_str(), o.mode.c_str(),
              ToHex(id).c_str());
  std::printf("record directory: <base>/%s\n", NamespaceDirName(id, whole).c_str());
  std::vector<Token> tokens(300);
  std::iota(tokens.begin(), tokens.end(), 1);
  PrefixHistory h(tokens);
  for (uint64_t c : {uint64_t{0}, uint64_t{64}, uint64_t{100}, uint64_t{256}}) {
    std::printf("key of tokens 1..%llu: %s.ckpt (bucket %s)\n", static_cast<unsigned long long>(c),
                h.key_at(c).ToFileStem().c_str(), ToHex(h.bucket_digest(c)).c_str());
  }
  return 0;
}

}  // namespace

void AddLayoutCommand(CLI::App& app) {
  auto opts = std::make_shared<LayoutOptions>();
  CLI::App* cmd = app.add_subcommand(
      "layout",
      "Describe a synthetic geometry: planes, layout fingerprints, namespace identity, keys");
  cmd->add_option("--preset", opts->preset, "Geometry preset (see --list)")->capture_default_str();
  cmd->add_option("--ranks", opts->ranks, "Tensor-parallel rank count")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--model", opts->model, "Model identity string")->capture_default_str();
  cmd->add_option("--mode", opts->mode,
                  "State mode: ordinary, learned-speculation, copy-speculation")
      ->capture_default_str();
  cmd->add_flag("--list", opts->list, "List the geometry presets and exit");
  cmd->callback([opts] {
    int rc = RunLayout(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata
