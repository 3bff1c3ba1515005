// `strata bench <name>`: each benchmark registers itself under the `bench`
// subcommand. Benchmarks print a baseline measured in the same run next to the
// result and their ratio, as a table and, with --json, as one JSON object.
#pragma once

namespace CLI {
class App;
}

namespace strata {

// Called by AddBenchCommand with the `bench` subcommand; one per benchmark.
// (Add a declaration here and a call in cmd_bench.cc for each new benchmark.)

// `strata bench store`: memory, disk and composite stores through host
// transfers next to memcpy and plain O_DIRECT I/O (launch/bench_store.cc).
void AddStoreBenchmark(CLI::App& bench);

}  // namespace strata
