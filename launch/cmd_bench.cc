// `strata bench`: the parent of every benchmark subcommand (launch/bench.h).
#include <CLI/CLI.hpp>

#include "launch/bench.h"
#include "launch/commands.h"

namespace strata {

void AddBenchCommand(CLI::App& app) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Benchmarks: each prints its result beside a baseline measured in the same run");
  bench->require_subcommand(1);
  AddLinksBench(*bench);
}

}  // namespace strata
