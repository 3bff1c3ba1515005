#include "launch/bench/disk_bench_report.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "launch/config/human_units.h"

namespace strata {

void PrintDiskBenchTable(const nlohmann::json& j) {
  std::printf(
      "strata bench disk: %u rounds of %u records of %s (%u pages x %u planes x %s + %s "
      "row) in %s, durability %s; medians\n",
      j["rounds"].get<uint32_t>(), j["records"].get<uint32_t>(),
      HumanBytes(j["record_bytes"].get<uint64_t>()).c_str(), j["pages"].get<uint32_t>(),
      j["planes"].get<uint32_t>(), HumanBytes(j["plane_bytes"].get<uint64_t>()).c_str(),
      HumanBytes(j["row_bytes"].get<uint64_t>()).c_str(), j["dir"].get<std::string>().c_str(),
      j["durability"].get<std::string>().c_str());
  std::printf("%-6s %11s %14s %7s %11s %11s %10s %15s\n", "phase", "store GB/s", "baseline GB/s",
              "ratio", "rec p50 ms", "rec p99 ms", "CPU s/GB", "checksum share");
  for (const char* phase : {"write", "read"}) {
    const nlohmann::json& p = j[phase];
    std::printf("%-6s %11.2f %14.2f %7.2f %11.1f %11.1f %10.3f %14.1f%%\n", phase,
                p["store_gbps"].get<double>(), p["baseline_gbps"].get<double>(),
                p["ratio"].get<double>(), p["store_p50_ms"].get<double>(),
                p["store_p99_ms"].get<double>(), p["store_cpu_s_per_gb"].get<double>(),
                100 * p["checksum_share"].get<double>());
  }
  std::printf(
      "CPU s/GB: write %.3f, read %.3f; floor (plain O_DIRECT + one read of every byte just "
      "landed, %.3f) write %.3f, read %.3f; goal <= 0.15\n",
      j["write"]["store_cpu_s_per_gb"].get<double>(), j["read"]["store_cpu_s_per_gb"].get<double>(),
      j["read_pass_cpu_s_per_gb"].get<double>(), j["write"]["floor_cpu_s_per_gb"].get<double>(),
      j["read"]["floor_cpu_s_per_gb"].get<double>());
  std::printf("  of which the disk thread's idle spin (%u us): write %.3f, read %.3f\n",
              j["idle_spin_us"].get<uint32_t>(), j["write"]["idle_spin_cpu_s_per_gb"].get<double>(),
              j["read"]["idle_spin_cpu_s_per_gb"].get<double>());
  const bool met = j["write_ratio"].get<double>() >= 0.90 &&
                   j["read_ratio"].get<double>() >= 0.90 &&
                   j["write"]["store_cpu_s_per_gb"].get<double>() <= 0.15 &&
                   j["read"]["store_cpu_s_per_gb"].get<double>() <= 0.15;
  std::printf("goal (both ratios >= 0.90, at most 0.15 CPU s/GB each way): %s\n",
              met ? "met" : "NOT met");
}

}  // namespace strata
