#include "launch/bench/pool_bench_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata {
namespace {

Sample Of(uint64_t bytes, double seconds, std::vector<double> latency_ms = {}) {
  Sample s;
  s.bytes = bytes;
  s.seconds = seconds;
  s.cpu_seconds = seconds / 2;
  s.latency_ms = std::move(latency_ms);
  return s;
}

TEST(PoolBenchReportTest, PhaseRatiosAreMediansOfPerRoundRatiosAgainstEachBaseline) {
  // Three rounds of 1 GB each: the pool at 4, 8 and 6 GB/s; memcpy at 10;
  // memcpy + XXH3 at 5. Per-round ratios 0.4, 0.8, 0.6 (median 0.6) and
  // 0.8, 1.6, 1.2 (median 1.2).
  const std::vector<Sample> pool = {Of(1'000'000'000, 0.25, {1, 2}), Of(1'000'000'000, 0.125, {3}),
                                    Of(1'000'000'000, 1.0 / 6)};
  const std::vector<Sample> copy(3, Of(1'000'000'000, 0.1));
  const std::vector<Sample> checked(3, Of(1'000'000'000, 0.2));
  const nlohmann::json j = PoolPhaseJson(pool, copy, checked);
  EXPECT_DOUBLE_EQ(j["gbps"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(j["baseline_gbps"].get<double>(), 10.0);
  EXPECT_NEAR(j["ratio"].get<double>(), 0.6, 1e-12);
  EXPECT_EQ(j["round_ratios"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["memcpy_xxh3_gbps"].get<double>(), 5.0);
  EXPECT_NEAR(j["ratio_vs_memcpy_xxh3"].get<double>(), 1.2, 1e-12);
  EXPECT_DOUBLE_EQ(j["p99_ms"].get<double>(), 3.0);  // latencies pooled over rounds
}

nlohmann::json Report(double put_ratio, double claim_ratio) {
  auto phase = [](double ratio) {
    return nlohmann::json{{"gbps", ratio * 10},
                          {"baseline_gbps", 10.0},
                          {"ratio", ratio},
                          {"memcpy_xxh3_gbps", 5.0},
                          {"ratio_vs_memcpy_xxh3", ratio * 2},
                          {"p50_ms", 1.5},
                          {"p99_ms", 2.5},
                          {"cpu_s_per_gb", 0.25}};
  };
  return {{"rounds", 5},
          {"records", 16},
          {"record_bytes", 4u << 20},
          {"preset", "tiny"},
          {"pages", 16},
          {"chain_records", 4},
          {"slots", 64},
          {"slot_bytes", 2u << 20},
          {"page_kind", "ordinary"},
          {"byte_check", "ok"},
          {"put", phase(put_ratio)},
          {"claim", phase(claim_ratio)}};
}

TEST(PoolBenchReportTest, GoalNeedsBothRatiosAtLeastPointEight) {
  EXPECT_TRUE(PoolGoalMet(Report(0.8, 0.8)));
  EXPECT_TRUE(PoolGoalMet(Report(1.1, 0.95)));
  EXPECT_FALSE(PoolGoalMet(Report(0.79, 0.9)));
  EXPECT_FALSE(PoolGoalMet(Report(0.9, 0.79)));
}

TEST(PoolBenchReportTest, TableShowsBothPhasesTheirBaselinesAndTheVerdict) {
  const std::string met = PoolBenchTable(Report(0.9, 0.85));
  EXPECT_NE(met.find("16 records of 4.00 MiB"), std::string::npos) << met;
  EXPECT_NE(met.find("64 x 2048 KiB slots"), std::string::npos) << met;
  EXPECT_NE(met.find("put        9.00        10.00    0.90"), std::string::npos) << met;
  EXPECT_NE(met.find("claim      8.50        10.00    0.85"), std::string::npos) << met;
  EXPECT_NE(met.find("bytes: ok"), std::string::npos) << met;
  EXPECT_NE(met.find(": met"), std::string::npos) << met;
  const std::string missed = PoolBenchTable(Report(0.9, 0.5));
  EXPECT_NE(missed.find("NOT met"), std::string::npos) << missed;
}

}  // namespace
}  // namespace strata
