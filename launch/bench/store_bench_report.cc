#include "launch/bench/store_bench_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace strata {

namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

nlohmann::json StorePhaseJson(const std::vector<Sample>& store, const std::vector<Sample>& base) {
  std::vector<double> sg, bg, ratio, cpu, lat;
  for (size_t i = 0; i < store.size(); ++i) {
    sg.push_back(store[i].gbps());
    bg.push_back(base[i].gbps());
    ratio.push_back(base[i].gbps() > 0 ? store[i].gbps() / base[i].gbps() : 0);
    cpu.push_back(store[i].bytes > 0
                      ? store[i].cpu_seconds / (static_cast<double>(store[i].bytes) / 1e9)
                      : 0);
    lat.insert(lat.end(), store[i].latency_ms.begin(), store[i].latency_ms.end());
  }
  return {{"gbps", Percentile(sg, 0.5)},         {"baseline_gbps", Percentile(bg, 0.5)},
          {"ratio", Percentile(ratio, 0.5)},     {"round_ratios", ratio},
          {"p50_ms", Percentile(lat, 0.5)},      {"p99_ms", Percentile(lat, 0.99)},
          {"cpu_s_per_gb", Percentile(cpu, 0.5)}};
}

void PrintStoreTable(const nlohmann::json& j, std::span<const char* const> phases) {
  std::printf("strata bench store: %u rounds of %u records of %u pages (%s) in %s, %s; medians\n",
              j["rounds"].get<uint32_t>(), j["records"].get<uint32_t>(), j["pages"].get<uint32_t>(),
              j["preset"].get<std::string>().c_str(), j["dir"].get<std::string>().c_str(),
              j["planes"].get<std::string>().c_str());
  std::printf("disk transport: %s (%s)\n", j["transport"].get<std::string>().c_str(),
              j["transport_reason"].get<std::string>().c_str());
  if (j["transport"] == "direct-compat") {
    std::printf(
        "note: cuFile compatibility mode (test only): the disk figures are cuFile's host bounce "
        "buffers, not GPUDirect\n");
  }
  std::printf("baselines: %s\n", j["baseline_work"].get<std::string>().c_str());
  std::printf("%-21s %8s %-30s %9s %7s %8s %8s %9s\n", "path", "GB/s", "baseline", "GB/s", "ratio",
              "p50 ms", "p99 ms", "CPU s/GB");
  for (const char* phase : phases) {
    const nlohmann::json& x = j[phase];
    if (x.contains("skipped")) {
      std::printf("%-21s skipped: %s\n", phase, x["skipped"].get<std::string>().c_str());
      continue;
    }
    std::printf("%-21s %8.2f %-30s %9.2f %7.2f %8.1f %8.1f %9.3f\n", phase, x["gbps"].get<double>(),
                x["baseline"].get<std::string>().c_str(), x["baseline_gbps"].get<double>(),
                x["ratio"].get<double>(), x["p50_ms"].get<double>(), x["p99_ms"].get<double>(),
                x["cpu_s_per_gb"].get<double>());
  }
  const bool met = j["memory_store_ratio"].get<double>() >= 0.8 &&
                   j["memory_fetch_ratio"].get<double>() >= 0.8 &&
                   j["disk_store_ratio"].get<double>() >= 0.9 &&
                   j["disk_fetch_ratio"].get<double>() >= 0.9;
  std::printf(
      "goal (memory store and fetch ratios >= 0.8, disk store and fetch ratios >= 0.9): %s\n",
      met ? "met" : "NOT met");
}

}  // namespace strata
