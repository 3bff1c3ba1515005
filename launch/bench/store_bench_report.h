// How `strata bench store` reports (launch/bench/bench_store.cc): one
// phase's medians over its rounds, and the human table of the --json object.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "launch/bench/store_bench_hand_work.h"

namespace strata {

// One phase over every round: medians of GB/s, of the baseline's GB/s and of
// the per-round ratios (each round measures both back to back, so slow drift
// cancels), the per-round ratios, latency p50/p99 over all records, CPU s/GB.
nlohmann::json StorePhaseJson(const std::vector<Sample>& store, const std::vector<Sample>& base);

// The table of a `strata bench store` JSON object, rows in `phases` order.
void PrintStoreTable(const nlohmann::json& j, std::span<const char* const> phases);

}  // namespace strata
