// `strata bench <name>`: each benchmark registers itself under the `bench`
// subcommand. Benchmarks print a baseline measured in the same run next to the
// result and their ratio, as a table and, with --json, as one JSON object.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "store/base/status.h"

namespace CLI {
class App;
}

namespace strata {

// The end of a benchmark's callback: on error prints "strata bench NAME:
// <status>" and exits 2 (CLI::RuntimeError); otherwise prints `result` as
// one JSON object with --json, else through `table`.
void PrintBenchResult(std::string_view name, const Status& status, const nlohmann::json& result,
                      bool json, const std::function<void(const nlohmann::json&)>& table);

// Called by AddBenchCommand with the `bench` subcommand; one per benchmark.
// (Add a declaration here and a call in cmd_bench.cc for each new benchmark.)
// `strata bench index`: PrefixIndex lookup latency and insert rate by size.
void AddIndexBench(CLI::App& bench);
// `strata bench disk`: record files through the disk thread vs plain O_DIRECT.
void AddDiskBenchmark(CLI::App& bench);
// `strata bench gpu`: copy-out and restore through CudaTransfers next to a
// pinned contiguous copy of the same bytes (launch/bench/bench_gpu.cc).
void AddGpuBench(CLI::App& bench);
// `strata bench links`: control-only job round trips through rank zero's
// sharded transport with 1, 2, 4 and 8 ranks on loopback next to a raw TCP
// ping-pong, and record store/fetch across 4 ranks vs 1 (launch/bench/bench_links.cc).
void AddLinksBench(CLI::App& bench);
// `strata bench store`: memory, disk and composite stores through host
// transfers next to memcpy and plain O_DIRECT I/O (launch/bench/bench_store.cc).
void AddStoreBenchmark(CLI::App& bench);
// `strata bench interference`: a compute-bound and a bandwidth-bound cuBLAS
// model stand-in alone and beside offload copies at full rate, and beside
// plain contiguous DMA (launch/bench/bench_interference.cc).
void AddInterferenceBench(CLI::App& bench);
// `strata bench attach`: Lookup/Store latency and restore GB/s through the
// attach channel next to the same calls in-process (launch/bench/bench_attach.cc).
void AddAttachBench(CLI::App& bench);
// `strata bench pool`: puts and claims through a pool manager's arena next to
// memcpy of the same bytes (launch/bench/bench_pool.cc).
void AddPoolBench(CLI::App& bench);

}  // namespace strata
