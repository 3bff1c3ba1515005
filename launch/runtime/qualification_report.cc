#include "launch/runtime/qualification_report.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace strata {

namespace {

void LogPhase(const PhaseReport& p) {
  spdlog::info("phase {}: {} — {}", p.name, p.ok ? "PASS" : "FAIL", p.detail);
}

}  // namespace

std::vector<PhaseReport> RunQualificationPhases(Qualification& q, QualifyPhases phases,
                                                const std::function<PhaseReport()>& more) {
  std::vector<PhaseReport> out;
  auto run = [&out](PhaseReport r) {
    LogPhase(r);
    out.push_back(std::move(r));
    return out.back().ok;
  };
  if (phases == QualifyPhases::kAfterRestart) {
    run(q.RestoreAfterRestart());
    return out;
  }
  if (!run(q.GpuHit()) || !run(q.HostRestore())) return out;
  if (more) run(more());
  return out;
}

void PrintSummaryTable(const std::vector<PhaseReport>& phases, const std::string& metrics_url) {
  std::printf("\n%-52s %-6s %9s %9s %8s %12s %10s\n", "phase", "result", "records", "host hits",
              "GPU hits", "restored MiB", "GB/s");
  for (const PhaseReport& p : phases) {
    std::printf("%-52s %-6s %9llu %9llu %8llu %12.2f %10.2f\n", p.name.c_str(),
                p.ok ? "PASS" : "FAIL", static_cast<unsigned long long>(p.records),
                static_cast<unsigned long long>(p.host_hits),
                static_cast<unsigned long long>(p.gpu_hits),
                static_cast<double>(p.restored_bytes) / (1 << 20), p.restore_gbps);
  }
  std::printf("records: record files per rank after the phase; metrics: %s\n\n",
              metrics_url.c_str());
  std::fflush(stdout);
}

nlohmann::json PhasesJson(const std::vector<PhaseReport>& phases) {
  nlohmann::json out = nlohmann::json::array();
  for (const PhaseReport& p : phases) {
    out.push_back({{"phase", p.name},
                   {"ok", p.ok},
                   {"detail", p.detail},
                   {"host_hits", p.host_hits},
                   {"gpu_hits", p.gpu_hits},
                   {"restored_bytes", p.restored_bytes},
                   {"restore_gbps", p.restore_gbps},
                   {"records_per_rank", p.records}});
  }
  return out;
}

int QualifyExitCode(const std::vector<PhaseReport>& phases) {
  return std::all_of(phases.begin(), phases.end(), [](const PhaseReport& p) { return p.ok; }) ? 0
                                                                                              : 2;
}

}  // namespace strata
