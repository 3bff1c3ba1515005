// `strata bench`: the parent of every benchmark subcommand (launch/bench.h).
#include <CLI/CLI.hpp>

#include "launch/bench.h"
#include "launch/commands.h"

namespace strata {

void AddBenchCommand(CLI::App& app) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Run a benchmark: its result next to a baseline measured in the same run");
  bench->require_subcommand(1);
  AddIndexBench(*bench);
  AddDiskBenchmark(*bench);
  AddGpuBench(*bench);
  AddLinksBench(*bench);
  AddStoreBenchmark(*bench);
}

}  // namespace strata
