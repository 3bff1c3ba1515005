// `strata rank`: run one rank process (see rank_process.h).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "coordinator/rendezvous/launcher_env.h"
#include "launch/commands.h"
#include "launch/config/config_flags.h"
#include "launch/rank/rank_process.h"

namespace strata {

void AddRankCommand(CLI::App& app) {
  auto flags = std::make_shared<ConfigFlags>();
  auto run = std::make_shared<RankRunOptions>();
  auto workload = std::make_shared<std::string>("serve");
  CLI::App* cmd = app.add_subcommand(
      "rank",
      "Run one rank: its stores, the join with the other ranks, the metrics endpoint and the "
      "synthetic runtime's workload. Rank and world size come from flags, the config file or the "
      "launcher's environment (torchrun, Slurm, Open MPI)");
  AddConfigFlags(cmd, flags.get());
  cmd->add_option("--workload", *workload,
                  "serve: run until SIGTERM/SIGINT; qualify: qualification phases then exit; "
                  "restore: restore the qualification's prefixes after a restart then exit")
      ->check(CLI::IsMember({"serve", "qualify", "restore"}))
      ->capture_default_str();
  cmd->add_option("--summary-json", run->summary_json,
                  "Where rank zero writes the qualification summary (JSON)");
  cmd->add_option("--seed", run->seed, "Seed of the synthetic runtime's token streams")
      ->capture_default_str();
  cmd->callback([flags, run, workload] {
    Result<LoadedConfig> loaded = LoadConfig(*flags, CurrentEnvironment());
    if (!loaded.ok()) {
      std::fprintf(stderr, "strata rank: %s\n", loaded.status().message().c_str());
      throw CLI::RuntimeError(2);
    }
    run->workload = *workload == "qualify"   ? Workload::kQualify
                    : *workload == "restore" ? Workload::kRestore
                                             : Workload::kServe;
    int rc = RunRank(*loaded, *run);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata
