// The table form of `strata bench disk`'s result (bench_disk.cc builds the
// JSON; docs/benchmarks.md names its fields): one line per phase and the
// goal's verdict.
#pragma once

#include <nlohmann/json.hpp>

namespace strata {

// Prints `j` (the bench's JSON result) as a table on stdout.
void PrintDiskBenchTable(const nlohmann::json& j);

}  // namespace strata
