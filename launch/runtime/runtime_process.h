// `strata runtime`: the synthetic runtime as a process of its own that
// attaches to its rank's `strata rank` (attach.socket) exactly as an
// inference runtime does (docs/embedding.md). It reads the same
// configuration as its rank, so both agree on geometry and model identity.
//
// Its planes are memfd host memory, or with runtime.gpus CUDA VMM
// allocations on the first listed device (what the rank serves).
//
//   rank zero: shares its planes, makes the store calls through the
//     attach channel (AttachedStore), runs the workload (qualification
//     phases, or turns until a signal) and drives the peers' runtimes over
//     the lockstep channel (runtime_lockstep.h);
//   a peer: shares its planes with its rank, joins rank zero's
//     runtime, and computes or verifies its own rank's pages as told until
//     rank zero's runtime says done.
#pragma once

#include <cstdint>
#include <string>

#include "launch/config/config.h"
#include "launch/runtime/qualification_report.h"

namespace strata {

enum class RuntimeWorkload : unsigned char { kServe, kQualify, kRestore };

struct RuntimeRunOptions {
  RuntimeWorkload workload = RuntimeWorkload::kServe;  // rank zero only
  std::string summary_json;  // rank zero: where to write the phases as JSON; empty: nowhere
  uint64_t seed = 1;         // rank zero: the token streams
};

// Runs this rank's runtime process; returns its exit code: 0, 1 (could not
// attach or join, or a turn failed), 2 (a qualification phase failed).
int RunRuntime(const RankConfig& config, const RuntimeRunOptions& options);

}  // namespace strata
