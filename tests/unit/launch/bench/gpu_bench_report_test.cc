#include "launch/bench/gpu_bench_report.h"

#include <gtest/gtest.h>

#include "launch/presets.h"

namespace strata {
namespace {

TEST(GpuBenchReportTest, PresetsClassifyByWhereTheirBytesSit) {
  EXPECT_EQ(ClassifyUnits(PresetGeometry("deepseek-like", 1, 1, 1)->ranks[0]), UnitClass::kLarge);
  EXPECT_EQ(ClassifyUnits(PresetGeometry("qwen-like", 1, 1, 1)->ranks[0]), UnitClass::kSmall);
  EXPECT_EQ(ClassifyUnits(PresetGeometry("small-planes", 1, 1, 1)->ranks[0]), UnitClass::kSmall);
  RankGeometry half{{"row", 1}, {{"a", 64 << 10}, {"b", 64 << 10}, {"c", 4096}}, 1, 1};
  EXPECT_EQ(ClassifyUnits(half), UnitClass::kLarge);  // 97% in 64 KiB planes
  half.page_planes[2].unit_bytes = 32 << 10;
  EXPECT_EQ(ClassifyUnits(half), UnitClass::kSmall);  // 80%
}

GpuBenchCase Case(const char* preset, UnitClass c, const char* method, const char* ids, double out,
                  double in) {
  GpuBenchCase k;
  k.preset = preset;
  k.unit_class = c;
  k.method = method;
  k.ids = ids;
  k.baseline_d2h_gbps = 50;
  k.baseline_h2d_gbps = 40;
  k.copy_out_gbps = out;
  k.restore_gbps = in;
  return k;
}

TEST(GpuBenchReportTest, SummaryTakesTheWorstDirectionPatternAndPresetPerClass) {
  std::vector<GpuBenchCase> cases = {
      Case("deepseek-like", UnitClass::kLarge, "batched", "sequential", 49, 39),  // .98 .975
      Case("deepseek-like", UnitClass::kLarge, "batched", "scattered", 45, 38),   // .90 .95
      Case("qwen-like", UnitClass::kSmall, "batched", "sequential", 20, 20),      // .40 .50
      Case("small-planes", UnitClass::kSmall, "batched", "scattered", 5, 8),      // .10 .20
      Case("small-planes", UnitClass::kSmall, "strided", "sequential", 45, 36),   // .90 .90
  };
  GpuBenchCase failed = Case("qwen-like", UnitClass::kSmall, "kernel", "sequential", 0, 0);
  failed.error = "failed precondition: no kernel";
  cases.push_back(failed);
  GpuBenchCase pipelined = Case("small-planes", UnitClass::kSmall, "batched", "scattered", 25, 20);
  pipelined.in_flight = 2;
  cases.push_back(pipelined);
  auto s = Summarize(cases);
  ASSERT_EQ(s.count("kernel_x1"), 1u);  // every case failed: kept, with no ratio
  EXPECT_FALSE(s.at("kernel_x1").small.measured);
  EXPECT_EQ(s.at("kernel_x1").small.failed, 1u);
  EXPECT_FALSE(s.at("kernel_x1").small.complete());
  EXPECT_DOUBLE_EQ(s.at("batched_x2").small.min(), 0.5);
  const MethodSummary& b = s.at("batched_x1");
  ASSERT_TRUE(b.large.measured);
  EXPECT_DOUBLE_EQ(b.large.copy_out, 0.9);
  EXPECT_DOUBLE_EQ(b.large.restore, 0.95);
  EXPECT_DOUBLE_EQ(b.large.min(), 0.9);
  EXPECT_DOUBLE_EQ(b.small.min(), 0.1);
  EXPECT_FALSE(s.at("strided_x1").large.measured);
  EXPECT_DOUBLE_EQ(s.at("strided_x1").small.min(), 0.9);

  GpuBenchRun run;
  run.default_config = "batched_x1";
  run.cases = cases;
  nlohmann::json j = GpuBenchJson(run);
  EXPECT_DOUBLE_EQ(j["large_unit_ratio"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(j["small_unit_ratio"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(j["small_unit_ratio_by_direction"]["restore"].get<double>(), 0.2);
  EXPECT_TRUE(j["configs"]["strided_x1"]["large_unit_ratio"].is_null());
  EXPECT_DOUBLE_EQ(j["configs"]["batched_x2"]["small_unit_ratio"]["min"].get<double>(), 0.5);
  EXPECT_EQ(j["cases"].size(), cases.size());
  EXPECT_EQ(j["cases"][5]["error"], "failed precondition: no kernel");
  EXPECT_TRUE(j["configs"]["kernel_x1"]["small_unit_ratio"]["min"].is_null());
  EXPECT_EQ(j["configs"]["kernel_x1"]["small_unit_ratio"]["failed_cases"], 1);
  EXPECT_EQ(j["failed_cases"], 1);
  EXPECT_DOUBLE_EQ(j["cases"][0]["copy_out_gbps"].get<double>(), 49);
  EXPECT_NE(GpuBenchTable(run).find("small_unit_ratio 0.1"), std::string::npos);
}

TEST(GpuBenchReportTest, AFailedCaseLeavesItsClassMinimumUnknownNotFlattered) {
  // The failed scattered case might have been the slowest: the class minimum
  // over the cases that ran would flatter the configuration.
  GpuBenchCase ran = Case("qwen-like", UnitClass::kSmall, "batched", "sequential", 45, 36);
  GpuBenchCase failed = Case("qwen-like", UnitClass::kSmall, "batched", "scattered", 0, 0);
  failed.error = "internal: window timed out";
  GpuBenchCase large = Case("deepseek-like", UnitClass::kLarge, "batched", "sequential", 49, 39);
  const std::vector<GpuBenchCase> cases = {ran, failed, large};
  EXPECT_EQ(FailedCases(cases), 1u);
  const ClassRatio small = Summarize(cases).at("batched_x1").small;
  EXPECT_TRUE(small.measured);
  EXPECT_EQ(small.failed, 1u);
  EXPECT_FALSE(small.complete());

  GpuBenchRun run;
  run.default_config = "batched_x1";
  run.cases = cases;
  nlohmann::json j = GpuBenchJson(run);
  EXPECT_TRUE(j["small_unit_ratio"].is_null());
  EXPECT_TRUE(j["small_unit_ratio_by_direction"]["min"].is_null());
  EXPECT_TRUE(j["small_unit_ratio_by_direction"]["restore"].is_null());
  EXPECT_EQ(j["small_unit_ratio_by_direction"]["failed_cases"], 1);
  EXPECT_DOUBLE_EQ(j["large_unit_ratio"].get<double>(), 0.975);  // its class is complete
  EXPECT_EQ(j["large_unit_ratio_by_direction"]["failed_cases"], 0);
  EXPECT_EQ(j["failed_cases"], 1);
  const std::string table = GpuBenchTable(run);
  EXPECT_NE(table.find("small_unit_ratio FAILED(1)"), std::string::npos);
  EXPECT_NE(table.find("1 of 3 cases FAILED"), std::string::npos);
}

TEST(GpuBenchReportTest, ARunWithoutFailuresReportsNone) {
  GpuBenchRun run;
  run.default_config = "batched_x1";
  run.cases = {Case("qwen-like", UnitClass::kSmall, "batched", "sequential", 20, 20)};
  EXPECT_EQ(FailedCases(run.cases), 0u);
  nlohmann::json j = GpuBenchJson(run);
  EXPECT_EQ(j["failed_cases"], 0);
  EXPECT_TRUE(j["large_unit_ratio"].is_null());  // no large-unit case ran
  EXPECT_DOUBLE_EQ(j["small_unit_ratio"].get<double>(), 0.4);
  EXPECT_EQ(GpuBenchTable(run).find("FAILED"), std::string::npos);
}

TEST(GpuBenchReportTest, SmSecondsPerGbAreTheKernelsSmBoundOverTheRate) {
  GpuBenchCase staged = Case("qwen-like", UnitClass::kSmall, "staged", "scattered", 50, 40);
  staged.copy_sms = 2;
  EXPECT_DOUBLE_EQ(staged.copy_out_sm_s_per_gb(), 0.04);  // 2 SMs x 1/50 s per GB
  EXPECT_DOUBLE_EQ(staged.restore_sm_s_per_gb(), 0.05);
  GpuBenchRun run;
  run.cases = {staged, Case("qwen-like", UnitClass::kSmall, "batched", "scattered", 5, 4)};
  nlohmann::json j = GpuBenchJson(run);
  EXPECT_DOUBLE_EQ(j["cases"][0]["copy_out_sm_s_per_gb"].get<double>(), 0.04);
  EXPECT_EQ(j["cases"][1]["copy_sms"].get<uint32_t>(), 0u);  // copy engines only
  EXPECT_DOUBLE_EQ(j["cases"][1]["restore_sm_s_per_gb"].get<double>(), 0);
}

TEST(GpuBenchReportTest, PercentileIsNearestRank) {
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({3, 1, 2}, 50), 2);
  EXPECT_EQ(Percentile({1, 2, 3, 4}, 50), 2);
  EXPECT_EQ(Percentile({5, 1, 9, 7}, 99), 9);
  EXPECT_EQ(Percentile({5, 1, 9, 7}, 0), 1);
}

}  // namespace
}  // namespace strata
