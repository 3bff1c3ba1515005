// Running the qualification's phases in order and reporting them: one log
// line per phase, the summary table on stdout and the phases as JSON. Shared
// by `strata rank` (the in-process synthetic runtime) and `strata runtime`
// (the attached runtime process of rank zero).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launch/runtime/qualification.h"

namespace strata {

// Which qualification phases a run performs.
enum class QualifyPhases : unsigned char {
  kFirstRun,      // phases 1-2 (and `more` after them, when given)
  kAfterRestart,  // phase 3: restore the first run's prefixes
};

// Runs the phases of `phases` in order, stopping after the first that
// fails; with kFirstRun, `more` (when set) runs after phases 1-2 pass.
std::vector<PhaseReport> RunQualificationPhases(Qualification& q, QualifyPhases phases,
                                                const std::function<PhaseReport()>& more = {});

// The summary table, on stdout.
void PrintSummaryTable(const std::vector<PhaseReport>& phases, const std::string& metrics_url);
// The "phases" array of the JSON summary.
nlohmann::json PhasesJson(const std::vector<PhaseReport>& phases);
// 0 when every phase passed, 2 otherwise.
int QualifyExitCode(const std::vector<PhaseReport>& phases);

}  // namespace strata
