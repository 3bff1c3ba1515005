#include "launch/bench/staged_cli.h"

namespace strata {

void AddStagedCli(CLI::App& cmd, StagedCli& cli) {
  cmd.add_option("--staged-blocks", cli.blocks, "SMs of the staged copy kernel")
      ->capture_default_str()
      ->check(CLI::Range(1u, 132u));
  cmd.add_option("--stage-kib", cli.stage_kib, "KiB of the staging window per DMA stage")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{64}, uint64_t{16384}));
  cmd.add_option("--launch-kib", cli.launch_kib,
                 "KiB of the staging window per kernel launch, at most")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{16}, uint64_t{16384}));
  cmd.add_option("--staged-direct-kib", cli.direct_kib,
                 "Pieces of at least this many KiB skip the staging window (0: none do)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{16384}));
  cmd.add_option("--staged-priority", cli.priority,
                 "Stream priority of the staged copy kernel: least or greatest")
      ->capture_default_str()
      ->check(CLI::IsMember({"least", "greatest"}));
  cmd.add_option("--staged-restore-list", cli.restore_list,
                 "Where a restore's scatter reads its piece list: params (in each launch's "
                 "parameters), device (uploaded by DMA ahead of the batch's extents) or host "
                 "(the pinned list, by its host pointer)")
      ->capture_default_str()
      ->check(CLI::IsMember({"params", "device", "host"}));
}

StagedCopierOptions ToStagedOptions(const StagedCli& cli) {
  StagedCopierOptions o;
  o.blocks = cli.blocks;
  o.stage_bytes = cli.stage_kib << 10;
  o.launch_bytes = cli.launch_kib << 10;
  o.direct_piece_bytes = cli.direct_kib << 10;
  o.kernel_priority =
      cli.priority == "greatest" ? StreamPriority::kGreatest : StreamPriority::kLeast;
  o.restore_piece_list = cli.restore_list == "host"     ? RestorePieceList::kMappedHost
                         : cli.restore_list == "device" ? RestorePieceList::kUploaded
                                                        : RestorePieceList::kParams;
  return o;
}

nlohmann::json StagedJson(const StagedCli& cli) {
  return {{"blocks", cli.blocks},         {"stage_kib", cli.stage_kib},
          {"launch_kib", cli.launch_kib}, {"direct_kib", cli.direct_kib},
          {"priority", cli.priority},     {"restore_list", cli.restore_list}};
}

}  // namespace strata
