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
    if (!c.error.empty()) continue;
    MethodSummary& m = out[c.config()];
    ClassRatio& r = c.unit_class == UnitClass::kLarge ? m.large : m.small;
    if (!r.measured) {
      r = {.measured = true, .copy_out = c.copy_out_ratio(), .restore = c.restore_ratio()};
    } else {
      r.copy_out = std::min(r.copy_out, c.copy_out_ratio());
      r.restore = std::min(r.restore, c.restore_ratio());
    }
  }
  return out;
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

nlohmann::json ClassJson(const ClassRatio& r) {
  if (!r.measured) return nullptr;
  return {
      {"copy_out", Round3(r.copy_out)}, {"restore", Round3(r.restore)}, {"min", Round3(r.min())}};
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
  j["large_unit_ratio"] =
      headline.large.measured ? nlohmann::json(Round3(headline.large.min())) : nullptr;
  j["small_unit_ratio"] =
      headline.small.measured ? nlohmann::json(Round3(headline.small.min())) : nullptr;
  if (!run.batch_order_probes.empty()) {
    j["batch_order_probe"] = nlohmann::json::object();
    for (const auto& [preset, probe] : run.batch_order_probes)
      j["batch_order_probe"][preset] = probe;
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
    std::snprintf(
        line, sizeof line, "%s%-11s large_unit_ratio %s  small_unit_ratio %s\n",
        config == run.default_config ? "* " : "  ", config.c_str(),
        s.large.measured ? std::to_string(Round3(s.large.min())).substr(0, 5).c_str() : "-",
        s.small.measured ? std::to_string(Round3(s.small.min())).substr(0, 5).c_str() : "-");
    out += line;
  }
  out +=
      "(* = default configuration: method_x<batches in flight>; a ratio is the minimum over "
      "directions, id patterns and presets of its unit class)\n";
  return out;
}

}  // namespace strata
