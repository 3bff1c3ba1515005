// `strata rank`: one process of a Strata deployment. It loads the typed
// configuration, opens this rank's stores, joins the other ranks (rank zero
// coordinates, peers run a rank agent), serves /metrics, /healthz and
// /status, runs the synthetic runtime's workload, and shuts down cleanly on
// SIGTERM/SIGINT (a second signal exits at once).
#pragma once

#include <string>

#include "launch/config/config_flags.h"

namespace strata {

enum class Workload : unsigned char {
  kServe,    // keep serving (and, on rank zero, run a light conversation load) until a signal
  kQualify,  // phases 1-2 (and 4 in one process), then exit
  kRestore,  // phase 3: restore the qualification's prefixes after a restart, then exit
};

struct RankRunOptions {
  Workload workload = Workload::kServe;
  std::string summary_json;  // where rank zero writes the qualification summary
  uint64_t seed = 1;         // the synthetic runtime's token streams
};

// Runs the process to completion; returns its exit code.
int RunRank(const LoadedConfig& loaded, const RankRunOptions& run);

}  // namespace strata
