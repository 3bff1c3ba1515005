// `strata bench <name>`: the parent of every benchmark (launch/bench.h).
// `strata bench <name>`: the benchmark programs (launch/bench.h).
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
      "bench", "Benchmarks: each prints a baseline measured in the same run beside its result");
  AddDiskBenchmark(*bench);
      "bench", "Benchmarks: each prints its result beside a baseline measured in the same run");
  AddGpuBench(*bench);
}

}  // namespace strata
