// The staged copy method's knobs on the GPU benchmarks' command lines
// (`strata bench gpu`, `strata bench interference`), so a sweep can move
// each one without a rebuild. Defaults are StagedCopierOptions'.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cuda/staged_copier.h"

namespace strata {

// The --staged-restore-list name of `list`: params, device or host.
inline const char* RestoreListName(RestorePieceList list) {
  switch (list) {
    case RestorePieceList::kMappedHost: return "host";
    case RestorePieceList::kUploaded: return "device";
    case RestorePieceList::kParams: break;
  }
  return "params";
}

struct StagedCli {
  uint32_t blocks = StagedCopierOptions{}.blocks;
  uint64_t stage_kib = StagedCopierOptions{}.stage_bytes >> 10;
  uint64_t launch_kib = StagedCopierOptions{}.launch_bytes >> 10;
  uint64_t direct_kib = StagedCopierOptions{}.direct_piece_bytes >> 10;
  std::string priority =
      StagedCopierOptions{}.kernel_priority == StreamPriority::kGreatest ? "greatest" : "least";
  std::string restore_list = RestoreListName(StagedCopierOptions{}.restore_piece_list);
};

// Adds --staged-blocks, --stage-kib, --launch-kib, --staged-direct-kib,
// --staged-priority, --staged-restore-list.
void AddStagedCli(CLI::App& cmd, StagedCli& cli);
// The options the flags name (the CLI has already checked their ranges).
StagedCopierOptions ToStagedOptions(const StagedCli& cli);
// {"blocks", "stage_kib", "launch_kib", "direct_kib", "priority",
// "restore_list"}, for a report.
nlohmann::json StagedJson(const StagedCli& cli);

}  // namespace strata
