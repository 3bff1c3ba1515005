// How `strata bench pool` reports (launch/bench/bench_pool.cc): one phase
// (puts or claims through the pool's arena) next to its baselines, the goal
// verdict, and the human table of the --json object. Pure data and
// arithmetic (no clock, no I/O), unit-tested in tests/unit/launch/bench/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launch/bench/store_bench_hand_work.h"

namespace strata {

// The goal of both phases: GB/s through the pool at least this share of a
// memcpy of the same bytes measured in the same run (issue 21).
inline constexpr double kPoolGoalRatio = 0.8;

// One phase over every round (StorePhaseJson: medians of GB/s, of the memcpy
// baseline's GB/s and of the per-round ratios, latency p50/p99 per call, CPU
// s/GB), plus `memcpy_xxh3_gbps` and `ratio_vs_memcpy_xxh3`: the same
// against memcpy followed by XXH3 over the bytes (the checksum the protocol
// computes on every put and claim), which says how much of the gap is the
// checksum and how much the manager's round trips. Rounds in the same order
// in all three; `pool` and `memcpy` of equal size.
nlohmann::json PoolPhaseJson(const std::vector<Sample>& pool, const std::vector<Sample>& memcpy,
                             const std::vector<Sample>& memcpy_xxh3);

// Whether both phases' `ratio` (vs memcpy) reach kPoolGoalRatio. `j` has
// "put" and "claim" phase objects.
bool PoolGoalMet(const nlohmann::json& j);

// Claims through the TCP data channel (StorePhaseJson) against a raw TCP
// transfer of the same bytes in the same run (`baseline_gbps`, `ratio`).
nlohmann::json PoolTcpPhaseJson(const std::vector<Sample>& pool,
                                const std::vector<Sample>& raw_tcp);
// Whether the "tcp_claim" phase's ratio reaches kPoolGoalRatio (issue 22).
bool PoolTcpGoalMet(const nlohmann::json& j);

// The table of a `strata bench pool` JSON object.
std::string PoolBenchTable(const nlohmann::json& j);

}  // namespace strata
