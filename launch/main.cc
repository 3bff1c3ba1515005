// The `strata` executable: one binary, one subcommand per job.
#include <CLI/CLI.hpp>

#include "launch/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "Strata offloads LLM inference KV-cache checkpoints from GPU memory to host DRAM and\n"
      "local NVMe and restores them byte-exact, across tensor-parallel ranks on separate hosts.",
      "strata"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand and exit");
  strata::AddVersionCommand(app);
  strata::AddLayoutCommand(app);
  strata::AddRankCommand(app);
  strata::AddRuntimeCommand(app);
  strata::AddFsckCommand(app);
  strata::AddInspectCommand(app);
  strata::AddPoolCommand(app);
  strata::AddBenchCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
