// `strata bench prefill`: restore versus recompute (launch/bench/bench_prefill.cc).
#pragma once

namespace CLI {
class App;
}

namespace strata {

// Registers `prefill` under `bench` (called by AddGpuBench).
void AddPrefillBench(CLI::App& bench);

}  // namespace strata
