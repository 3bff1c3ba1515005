#include "launch/bench/pool_bench_report.h"

#include <cstdio>

#include "launch/bench/store_bench_report.h"

namespace strata {

nlohmann::json PoolPhaseJson(const std::vector<Sample>& pool, const std::vector<Sample>& memcpy,
                             const std::vector<Sample>& memcpy_xxh3) {
  nlohmann::json phase = StorePhaseJson(pool, memcpy);
  const nlohmann::json checked = StorePhaseJson(pool, memcpy_xxh3);
  phase["memcpy_xxh3_gbps"] = checked["baseline_gbps"];
  phase["ratio_vs_memcpy_xxh3"] = checked["ratio"];
  return phase;
}

bool PoolGoalMet(const nlohmann::json& j) {
  return j["put"]["ratio"].get<double>() >= kPoolGoalRatio &&
         j["claim"]["ratio"].get<double>() >= kPoolGoalRatio;
}

nlohmann::json PoolTcpPhaseJson(const std::vector<Sample>& pool,
                                const std::vector<Sample>& raw_tcp) {
  return StorePhaseJson(pool, raw_tcp);
}

bool PoolTcpGoalMet(const nlohmann::json& j) {
  return j["tcp_claim"]["ratio"].get<double>() >= kPoolGoalRatio;
}

std::string PoolBenchTable(const nlohmann::json& j) {
  std::string out;
  auto line = [&out](const char* format, auto... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, format, args...);
    out += buf;
  };
  line(
      "strata bench pool: %u rounds of %u records of %.2f MiB (%s, %u tail pages) in chains of "
      "%u, arena %u x %llu KiB slots (%s pages); medians\n",
      j["rounds"].get<uint32_t>(), j["records"].get<uint32_t>(),
      static_cast<double>(j["record_bytes"].get<uint64_t>()) / (1 << 20),
      j["preset"].get<std::string>().c_str(), j["pages"].get<uint32_t>(),
      j["chain_records"].get<uint32_t>(), j["slots"].get<uint32_t>(),
      static_cast<unsigned long long>(j["slot_bytes"].get<uint64_t>() >> 10),
      j["page_kind"].get<std::string>().c_str());
  line("%-6s %8s %12s %7s %17s %7s %8s %8s %9s\n", "op", "GB/s", "memcpy GB/s", "ratio",
       "memcpy+XXH3 GB/s", "ratio", "p50 ms", "p99 ms", "CPU s/GB");
  for (const char* op : {"put", "claim"}) {
    const nlohmann::json& x = j[op];
    line("%-6s %8.2f %12.2f %7.2f %17.2f %7.2f %8.2f %8.2f %9.3f\n", op, x["gbps"].get<double>(),
         x["baseline_gbps"].get<double>(), x["ratio"].get<double>(),
         x["memcpy_xxh3_gbps"].get<double>(), x["ratio_vs_memcpy_xxh3"].get<double>(),
         x["p50_ms"].get<double>(), x["p99_ms"].get<double>(), x["cpu_s_per_gb"].get<double>());
  }
  if (j.contains("tcp_claim")) {
    const nlohmann::json& x = j["tcp_claim"];
    line("%-6s %8.2f %12s %7.2f %17s %7s %8.2f %8.2f %9.3f\n", "tcp", x["gbps"].get<double>(), "",
         x["ratio"].get<double>(), "", "", x["p50_ms"].get<double>(), x["p99_ms"].get<double>(),
         x["cpu_s_per_gb"].get<double>());
    line(
        "tcp: claims through the TCP data channel; ratio vs a raw loopback TCP transfer of the "
        "same bytes (%.2f GB/s)\n",
        x["baseline_gbps"].get<double>());
  }
  line("bytes: %s\n", j["byte_check"].get<std::string>().c_str());
  line("goal (put and claim ratios vs memcpy >= %.1f): %s\n", kPoolGoalRatio,
       PoolGoalMet(j) ? "met" : "NOT met");
  if (j.contains("tcp_claim")) {
    line("goal (TCP claim ratio vs raw TCP >= %.1f): %s\n", kPoolGoalRatio,
         PoolTcpGoalMet(j) ? "met" : "NOT met");
  }
  return out;
}

}  // namespace strata
