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

// `strata bench index`: PrefixIndex lookup latency and insert rate by size.
void AddIndexBench(CLI::App& bench);
// `strata bench disk`: record files through the disk thread vs plain O_DIRECT.
void AddDiskBenchmark(CLI::App& bench);
// `strata bench gpu`: copy-out and restore through CudaTransfers next to a
// pinned contiguous copy of the same bytes (launch/bench_gpu.cc).
void AddGpuBench(CLI::App& bench);
// `strata bench links`: control-only job round trips through rank zero's
// sharded transport with 1, 2, 4 and 8 ranks on loopback next to a raw TCP
// ping-pong, and record store/fetch across 4 ranks vs 1 (launch/bench_links.cc).
void AddLinksBench(CLI::App& bench);
// `strata bench store`: memory, disk and composite stores through host
// transfers next to memcpy and plain O_DIRECT I/O (launch/bench_store.cc).
void AddStoreBenchmark(CLI::App& bench);

}  // namespace strata
