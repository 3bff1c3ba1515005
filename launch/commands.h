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
// `strata bench <name>` (benchmarks register in cmd_bench.cc, see bench.h).
void AddBenchCommand(CLI::App& app);

}  // namespace strata
