// What `strata bench gpu` measured, and how it is summarized: pure data and
// arithmetic (no driver, no clock), so the summary rules are unit-tested.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/record/geometry.h"

namespace strata {

// A geometry is "large-unit" when at least 90% of a page's bytes sit in
// planes of 64 KiB or more (copy engines reach the PCIe limit from 64 KiB
// pieces up), else "small-unit".
inline constexpr uint64_t kLargeUnitBytes = 64 << 10;
enum class UnitClass : unsigned char { kLarge, kSmall };
UnitClass ClassifyUnits(const RankGeometry& rank);
const char* UnitClassName(UnitClass c);

// One preset x copy method x id pattern, both directions, medians of the
// repetitions. Rates are GB/s (1e9 bytes per second).
struct GpuBenchCase {
  std::string preset;
  UnitClass unit_class = UnitClass::kSmall;
  std::string method;
  uint32_t in_flight = 1;  // batches in flight per rank
  std::string ids;         // "sequential" or "scattered"
  uint64_t pages = 0;
  uint64_t bytes = 0;  // moved per direction per repetition
  double baseline_d2h_gbps = 0;
  double baseline_h2d_gbps = 0;
  double copy_out_gbps = 0;
  double restore_gbps = 0;
  double copy_out_cpu_s_per_gb = 0;
  double restore_cpu_s_per_gb = 0;
  double copy_out_window_ms_p50 = 0;  // one 64-page window alone, submit to completion
  double copy_out_window_ms_p99 = 0;
  double restore_window_ms_p50 = 0;
  double restore_window_ms_p99 = 0;
  // SMs the copy kernel may hold at once (0 for copy-engine methods): the
  // SM-seconds per GB below are this bound times the wall time, an upper
  // bound on what the copies take from the model.
  uint32_t copy_sms = 0;
  std::string error;  // set when the method could not run; rates are then 0

  double copy_out_sm_s_per_gb() const;
  double restore_sm_s_per_gb() const;

  // "<method>_x<in_flight>", e.g. "batched_x1": what the summary groups by.
  std::string config() const;
  double copy_out_ratio() const;
  double restore_ratio() const;
  double ratio() const;  // the smaller direction
};

// Ratios of one unit class for one method: the minimum over that class's
// presets and id patterns, per direction and overall. A failed case is never
// left out of a minimum: while `failed` > 0 the minimum is unknown (complete()
// is false, and the JSON reports it as null beside the failure count).
struct ClassRatio {
  bool measured = false;  // at least one case of the class ran
  uint32_t failed = 0;    // cases of the class that could not run
  double copy_out = 0;    // over the cases that ran
  double restore = 0;
  bool complete() const { return measured && failed == 0; }
  double min() const { return copy_out < restore ? copy_out : restore; }
};

struct MethodSummary {
  ClassRatio large;
  ClassRatio small;
};

// Per config(), every configuration with a case, failed ones included.
std::map<std::string, MethodSummary> Summarize(const std::vector<GpuBenchCase>& cases);

// Cases with an error: a run with any is a failed run (`strata bench gpu`
// prints its report and exits 1).
size_t FailedCases(const std::vector<GpuBenchCase>& cases);

// Percentile `p` (0..100, nearest rank) of `values`; 0 when empty.
double Percentile(std::vector<double> values, double p);

struct GpuBenchRun {
  int device = 0;
  std::string device_name;
  int driver_version = 0;
  int repetitions = 0;
  std::string default_config;  // the headline's configuration
  std::vector<GpuBenchCase> cases;
  // Per small-unit preset: one store-built batch through cuMemcpyBatchAsync
  // alone in device and host order (batch_order_probe.h).
  std::map<std::string, nlohmann::json> batch_order_probes;
  // The staged method's settings, and per preset with --staged-probe the
  // halves of the staged path timed apart (staged_path_probe.h).
  nlohmann::json staged;
  std::map<std::string, nlohmann::json> staged_probes;
};

// The --json object: every case, the per-configuration summary, and the
// headline large_unit_ratio / small_unit_ratio of the default configuration
// (null when a case of that class failed or none ran); failed_cases counts
// the cases with an error.
nlohmann::json GpuBenchJson(const GpuBenchRun& run);
// The human table.
std::string GpuBenchTable(const GpuBenchRun& run);

}  // namespace strata
