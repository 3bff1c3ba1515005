// `strata bench <name>`: the benchmark programs (launch/bench.h).
#include <CLI/CLI.hpp>

#include "launch/bench.h"
#include "launch/commands.h"

namespace strata {

void AddBenchCommand(CLI::App& app) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Benchmarks: each prints a baseline measured in the same run beside its result");
  bench->require_subcommand(1);
  AddStoreBenchmark(*bench);
}

}  // namespace strata
