// `strata bench`: the parent of every benchmark subcommand (launch/bench/bench.h).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "launch/bench/bench.h"
#include "launch/commands.h"

namespace strata {

void PrintBenchResult(std::string_view name, const Status& status, const nlohmann::json& result,
                      bool json, const std::function<void(const nlohmann::json&)>& table) {
  if (!status.ok()) {
    std::fprintf(stderr, "strata bench %.*s: %s\n", static_cast<int>(name.size()), name.data(),
                 status.ToString().c_str());
    throw CLI::RuntimeError(2);
  }
  if (json) {
    std::printf("%s\n", result.dump(2).c_str());
  } else {
    table(result);
  }
}

void AddBenchCommand(CLI::App& app) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Run a benchmark: its result next to a baseline measured in the same run");
  bench->require_subcommand(1);
  AddIndexBench(*bench);
  AddDiskBenchmark(*bench);
  AddGpuBench(*bench);
  AddLinksBench(*bench);
  AddStoreBenchmark(*bench);
  AddInterferenceBench(*bench);
  AddAttachBench(*bench);
  AddPoolBench(*bench);
}

}  // namespace strata
