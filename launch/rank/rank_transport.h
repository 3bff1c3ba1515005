// Which disk transport a rank's record jobs run on ([prefix_cache]
// transport, seed 2.6): runs the GPUDirect Storage probe on this host for
// "auto" and "direct" and applies its decision table (cuda/gds_probe.h).
// The startup line and /status report the result and its reason.
#pragma once

#include <string>

#include "cuda/gds_probe.h"
#include "launch/config/config.h"

namespace strata {

// "staged" for a configuration without a disk directory. kFailedPrecondition
// when transport = "direct" and the probe refuses (its reason in the
// message), or while this build has no DirectTransport to run.
Result<TransportDecision> ChooseRankTransport(const RankConfig& config,
                                              const std::string& record_dir);

// "transport staged (direct refused: ...)", for the startup line.
std::string TransportSummary(const TransportDecision& decision);

}  // namespace strata
