// `strata runtime`: the synthetic runtime as its own process, attached to
// its rank's `strata rank` (see launch/runtime/runtime_process.h).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "coordinator/rendezvous/launcher_env.h"
#include "launch/commands.h"
#include "launch/config/config_flags.h"
#include "launch/runtime/runtime_process.h"

namespace strata {

void AddRuntimeCommand(CLI::App& app) {
  auto flags = std::make_shared<ConfigFlags>();
  auto run = std::make_shared<RuntimeRunOptions>();
  auto workload = std::make_shared<std::string>("serve");
  CLI::App* cmd = app.add_subcommand(
      "runtime",
      "Run the synthetic runtime of one rank as its own process, attached to that rank's "
      "`strata rank` at attach.socket (give it the same flags or config file as the rank). Rank "
      "zero's runtime makes the store calls and runs the workload; a peer's runtime shares its "
      "planes and computes and checks its rank's pages as rank zero's runtime tells it");
  AddConfigFlags(cmd, flags.get());
  cmd->add_option("--workload", *workload,
                  "Rank zero: serve: turns until SIGTERM/SIGINT; qualify: qualification phases "
                  "1-2 then exit; restore: phase 3 after every process restarted, then exit")
      ->check(CLI::IsMember({"serve", "qualify", "restore"}))
      ->capture_default_str();
  cmd->add_option("--summary-json", run->summary_json,
                  "Where rank zero's runtime writes the qualification summary (JSON)");
  cmd->add_option("--seed", run->seed, "Seed of the synthetic runtime's token streams")
      ->capture_default_str();
  cmd->callback([flags, run, workload] {
    Result<LoadedConfig> loaded = LoadConfig(*flags, CurrentEnvironment());
    if (!loaded.ok()) {
      std::fprintf(stderr, "strata runtime: %s\n", loaded.status().message().c_str());
      throw CLI::RuntimeError(2);
    }
    run->workload = *workload == "qualify"   ? RuntimeWorkload::kQualify
                    : *workload == "restore" ? RuntimeWorkload::kRestore
                                             : RuntimeWorkload::kServe;
    const int rc = RunRuntime(loaded->config, *run);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata
