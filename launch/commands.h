// Each `strata` subcommand registers itself on the top-level CLI11 app.
// A command reports failure by throwing CLI::RuntimeError(exit_code) from its
// callback, after printing its own message to stderr.
#pragma once

namespace CLI {
class App;
}

namespace strata {

void AddVersionCommand(CLI::App& app);
void AddLayoutCommand(CLI::App& app);
void AddRankCommand(CLI::App& app);
void AddRuntimeCommand(CLI::App& app);
void AddFsckCommand(CLI::App& app);
void AddInspectCommand(CLI::App& app);
// `strata pool`: the pool manager (coordinator/pool/, docs/pool.md).
void AddPoolCommand(CLI::App& app);
// `strata bench <name>`: the benchmarks (launch/bench/bench.h, cmd_bench.cc).
void AddBenchCommand(CLI::App& app);

}  // namespace strata
