#include "coordinator/pool/attach_rules.h"

namespace strata::pool {

std::string_view AttachStepName(AttachStep step) {
  switch (step) {
    case AttachStep::kRetrySilently: return "retry_silently";
    case AttachStep::kGiveUpWithWarning: return "give_up_with_warning";
    case AttachStep::kRetry: return "retry";
    case AttachStep::kStayLocal: return "stay_local";
  }
  return "unknown";
}

AttachFailure AttachFailureOf(const Status& connect_error) {
  return connect_error.code() == StatusCode::kFailedPrecondition ||
                 connect_error.code() == StatusCode::kInvalidArgument
             ? AttachFailure::kRefused
             : AttachFailure::kUnreachable;
}

AttachStep AfterFailedAttach(AttachPhase phase, uint64_t started_ms, uint64_t now_ms,
                             AttachFailure failure) {
  switch (phase) {
    case AttachPhase::kAttached: return AttachStep::kRetry;
    case AttachPhase::kLocalForever: return AttachStep::kStayLocal;
    case AttachPhase::kStartup: break;
  }
  if (failure == AttachFailure::kRefused) return AttachStep::kGiveUpWithWarning;
  const uint64_t waited = now_ms > started_ms ? now_ms - started_ms : 0;
  return waited < kStartupAttachWaitMs ? AttachStep::kRetrySilently
                                       : AttachStep::kGiveUpWithWarning;
}

Reattach DecideReattach(const ArenaShape& registered, const ArenaShape& announced) {
  return registered == announced ? Reattach::kReuseRegistrations : Reattach::kDisableSharing;
}

std::string ReattachWarning(const ArenaShape& registered, const ArenaShape& announced) {
  std::string why;
  if (registered.generation != announced.generation) {
    why = "generation " + std::to_string(registered.generation) + " became " +
          std::to_string(announced.generation);
  } else {
    uint64_t before = 0;
    uint64_t after = 0;
    for (uint64_t b : registered.region_bytes) before += b;
    for (uint64_t b : announced.region_bytes) after += b;
    why = std::to_string(registered.region_bytes.size()) + " regions of " + std::to_string(before) +
          " bytes became " + std::to_string(announced.region_bytes.size()) + " regions of " +
          std::to_string(after) + " bytes";
  }
  return "prefix cache pool sharing disabled: the manager's memory changed (" + why +
         "); continuing on local tiers until a restart";
}

}  // namespace strata::pool
