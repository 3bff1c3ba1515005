#include "launch/bench/gpu_bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace strata {

UnitClass ClassifyUnits(const RankGeometry& rank) {
  uint64_t large = 0;
  uint64_t total = 0;
  for (const PlaneSpec& p : rank.page_planes) {
    total += p.unit_bytes;
    if (p.unit_bytes >= kLargeUnitBytes) large += p.unit_bytes;
  }
  return total > 0 && large * 10 >= total * 9 ? UnitClass::kLarge : UnitClass::kSmall;
}

const char* UnitClassName(UnitClass c) { return c == UnitClass::kLarge ? "large" : "small"; }

namespace {
double Ratio(double value, double baseline) { return baseline > 0 ? value / baseline : 0; }
}  // namespace

std::string GpuBenchCase::config() const { return method + "_x" + std::to_string(in_flight); }

double GpuBenchCase::copy_out_ratio() const { return Ratio(copy_out_gbps, baseline_d2h_gbps); }
double GpuBenchCase::restore_ratio() const { return Ratio(restore_gbps, baseline_h2d_gbps); }
double GpuBenchCase::ratio() const { return std::min(copy_out_ratio(), restore_ratio()); }
double GpuBenchCase::copy_out_sm_s_per_gb() const { return Ratio(copy_sms, copy_out_gbps); }
double GpuBenchCase::restore_sm_s_per_gb() const { return Ratio(copy_sms, restore_gbps); }

std::map<std::string, MethodSummary> Summarize(const std::vector<GpuBenchCase>& cases) {
  std::map<std::string, MethodSummary> out;
  for (const GpuBenchCase& c : cases) {
    MethodSummary& m = out[c.config()];
    ClassRatio& r = c.unit_class == UnitClass::kLarge ? m.large : m.small;
    if (!c.error.empty()) {
      ++r.failed;
    } else if (!r.measured) {
      r = {.measured = true, .copy_out = c.copy_out_ratio(), .restore = c.restore_ratio()};
    } else {
      r.copy_out = std::min(r.copy_out, c.copy_out_ratio());
      r.restore = std::min(r.restore, c.restore_ratio());
    }
  }
  return out;
}

size_t FailedCases(const std::vector<GpuBenchCase>& cases) {
  return static_cast<size_t>(std::count_if(cases.begin(), cases.end(),
                                           [](const GpuBenchCase& c) { return !c.error.empty(); }));
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

namespace {

double Round3(double v) { return std::round(v * 1000) / 1000; }
double Round4(double v) { return std::round(v * 10000) / 10000; }

// null when the class had no case at all; else the minima, null where a
// failed case leaves them unknown.
nlohmann::json ClassJson(const ClassRatio& r) {
  if (!r.measured && r.failed == 0) return nullptr;
  auto known = [&](double v) { return r.complete() ? nlohmann::json(Round3(v)) : nullptr; };
  return {{"copy_out", known(r.copy_out)},
          {"restore", known(r.restore)},
          {"min", known(r.min())},
          {"failed_cases", r.failed}};
}

nlohmann::json Headline(const ClassRatio& r) {
  return r.complete() ? nlohmann::json(Round3(r.min())) : nullptr;
}

// The table's cell for one class: its minimum, "-" without cases, or
// "FAILED" when a case of it failed.
std::string ClassCell(const ClassRatio& r) {
  if (r.failed > 0) return "FAILED(" + std::to_string(r.failed) + ")";
  if (!r.measured) return "-";
  return std::to_string(Round3(r.min())).substr(0, 5);
}

}  // namespace

nlohmann::json GpuBenchJson(const GpuBenchRun& run) {
  nlohmann::json j;
  j["bench"] = "gpu";
  j["device"] = {
      {"ordinal", run.device}, {"name", run.device_name}, {"driver_version", run.driver_version}};
  j["repetitions"] = run.repetitions;
  j["statistic"] = "median";
  j["default_config"] = run.default_config;
  j["cases"] = nlohmann::json::array();
  for (const GpuBenchCase& c : run.cases) {
    nlohmann::json k = {{"preset", c.preset},
                        {"unit_class", UnitClassName(c.unit_class)},
                        {"method", c.method},
                        {"in_flight", c.in_flight},
                        {"ids", c.ids},
                        {"pages", c.pages},
                        {"bytes", c.bytes},
                        {"baseline_d2h_gbps", Round3(c.baseline_d2h_gbps)},
                        {"baseline_h2d_gbps", Round3(c.baseline_h2d_gbps)}};
    if (!c.error.empty()) {
      k["error"] = c.error;
    } else {
      k["copy_out_gbps"] = Round3(c.copy_out_gbps);
      k["restore_gbps"] = Round3(c.restore_gbps);
      k["copy_out_ratio"] = Round3(c.copy_out_ratio());
      k["restore_ratio"] = Round3(c.restore_ratio());
      k["ratio"] = Round3(c.ratio());
      k["copy_sms"] = c.copy_sms;
      k["copy_out_sm_s_per_gb"] = Round4(c.copy_out_sm_s_per_gb());
      k["restore_sm_s_per_gb"] = Round4(c.restore_sm_s_per_gb());
      k["copy_out_cpu_s_per_gb"] = Round3(c.copy_out_cpu_s_per_gb);
      k["restore_cpu_s_per_gb"] = Round3(c.restore_cpu_s_per_gb);
      k["window_latency_ms"] = {{"copy_out_p50", Round3(c.copy_out_window_ms_p50)},
                                {"copy_out_p99", Round3(c.copy_out_window_ms_p99)},
                                {"restore_p50", Round3(c.restore_window_ms_p50)},
                                {"restore_p99", Round3(c.restore_window_ms_p99)}};
    }
    j["cases"].push_back(std::move(k));
  }
  const auto summary = Summarize(run.cases);
  j["configs"] = nlohmann::json::object();
  for (const auto& [config, s] : summary) {
    j["configs"][config] = {{"large_unit_ratio", ClassJson(s.large)},
                            {"small_unit_ratio", ClassJson(s.small)}};
  }
  auto it = summary.find(run.default_config);
  const MethodSummary headline = it != summary.end() ? it->second : MethodSummary{};
  j["large_unit_ratio"] = Headline(headline.large);
  j["small_unit_ratio"] = Headline(headline.small);
  j["failed_cases"] = FailedCases(run.cases);
  if (!run.batch_order_probes.empty()) {
    j["batch_order_probe"] = nlohmann::json::object();
    for (const auto& [preset, probe] : run.batch_order_probes)
      j["batch_order_probe"][preset] = probe;
  }
  if (!run.staged.is_null()) j["staged"] = run.staged;
  if (!run.staged_probes.empty()) {
    j["staged_probe"] = nlohmann::json::object();
    for (const auto& [preset, probe] : run.staged_probes) j["staged_probe"][preset] = probe;
  }
  j["large_unit_ratio_by_direction"] = ClassJson(headline.large);
  j["small_unit_ratio_by_direction"] = ClassJson(headline.small);
  return j;
}

std::string GpuBenchTable(const GpuBenchRun& run) {
  std::string out;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "strata bench gpu: %s (device %d), driver %d.%d, median of %d; baseline = one pinned "
      "contiguous cuMemcpyAsync of the same bytes\n",
      run.device_name.c_str(), run.device, run.driver_version / 1000,
      run.driver_version % 1000 / 10, run.repetitions);
  out += line;
  std::snprintf(line, sizeof line,
                "%-14s %-5s %-11s %-10s %6s | %9s %9s %5s | %9s %9s %5s | %5s | %s\n", "preset",
                "units", "config", "ids", "MiB", "out GB/s", "base D2H", "ratio", "in GB/s",
                "base H2D", "ratio", "min", "window p50/p99 ms (out, in)");
  out += line;
  for (const GpuBenchCase& c : run.cases) {
    if (!c.error.empty()) {
      std::snprintf(line, sizeof line, "%-14s %-5s %-11s %-10s %6llu | %s\n", c.preset.c_str(),
                    UnitClassName(c.unit_class), c.config().c_str(), c.ids.c_str(),
                    static_cast<unsigned long long>(c.bytes >> 20), c.error.c_str());
    } else {
      std::snprintf(
          line, sizeof line,
          "%-14s %-5s %-11s %-10s %6llu | %9.2f %9.2f %5.2f | %9.2f %9.2f %5.2f | %5.2f | "
          "%.2f/%.2f, %.2f/%.2f\n",
          c.preset.c_str(), UnitClassName(c.unit_class), c.config().c_str(), c.ids.c_str(),
          static_cast<unsigned long long>(c.bytes >> 20), c.copy_out_gbps, c.baseline_d2h_gbps,
          c.copy_out_ratio(), c.restore_gbps, c.baseline_h2d_gbps, c.restore_ratio(), c.ratio(),
          c.copy_out_window_ms_p50, c.copy_out_window_ms_p99, c.restore_window_ms_p50,
          c.restore_window_ms_p99);
    }
    out += line;
  }
  for (const auto& [config, s] : Summarize(run.cases)) {
    std::snprintf(line, sizeof line, "%s%-11s large_unit_ratio %s  small_unit_ratio %s\n",
                  config == run.default_config ? "* " : "  ", config.c_str(),
                  ClassCell(s.large).c_str(), ClassCell(s.small).c_str());
    out += line;
  }
  if (const size_t failed = FailedCases(run.cases); failed > 0) {
    std::snprintf(line, sizeof line, "%zu of %zu cases FAILED (their classes have no ratio)\n",
                  failed, run.cases.size());
    out += line;
  }
  out +=
      "(* = default configuration: method_x<batches in flight>; a ratio is the minimum over "
      "directions, id patterns and presets of its unit class)\n";
  return out;
}

}  // namespace strata
