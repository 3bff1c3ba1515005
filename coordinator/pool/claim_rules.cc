#include "coordinator/pool/claim_rules.h"

#include <algorithm>

namespace strata::pool {

uint64_t ByteAllowanceMs(uint64_t bytes) {
  // bytes * 1000 overflows past 16 EiB / 1000; split to stay exact.
  const uint64_t whole = bytes / kClaimBytesPerSecond;
  const uint64_t rest = bytes % kClaimBytesPerSecond;
  return whole * 1000 + (rest * 1000 + kClaimBytesPerSecond - 1) / kClaimBytesPerSecond;
}

uint64_t ClaimBudgetMs(uint64_t bytes) { return kClaimSetupMs + ByteAllowanceMs(bytes); }

uint64_t ManagerClaimBudgetMs(uint64_t requested_setup_ms, uint64_t setup_limit_ms,
                              uint64_t bytes) {
  return std::min(requested_setup_ms, setup_limit_ms) + ByteAllowanceMs(bytes);
}

uint64_t RequesterClaimBudgetMs(uint64_t bytes, uint64_t bytes_ahead) {
  return kRequesterSetupMs + ByteAllowanceMs(bytes + bytes_ahead);
}

std::string_view ClaimAdmissionName(ClaimAdmission admission) {
  switch (admission) {
    case ClaimAdmission::kAdmit: return "admit";
    case ClaimAdmission::kNotFound: return "not_found";
    case ClaimAdmission::kNotReady: return "not_ready";
    case ClaimAdmission::kBusy: return "busy";
  }
  return "unknown";
}

ClaimAdmission AdmitClaim(PooledState state, uint32_t claims_in_flight, uint32_t claims_limit) {
  if (state == PooledState::kAbsent) return ClaimAdmission::kNotFound;
  if (state == PooledState::kArriving) return ClaimAdmission::kNotReady;
  if (claims_in_flight >= claims_limit) return ClaimAdmission::kBusy;
  return ClaimAdmission::kAdmit;
}

std::string_view ClaimHealthName(ClaimHealth health) {
  switch (health) {
    case ClaimHealth::kRunning: return "running";
    case ClaimHealth::kStalled: return "stalled";
    case ClaimHealth::kDeadlinePast: return "deadline_past";
  }
  return "unknown";
}

ClaimHealth CheckClaim(const ClaimClock& clock, uint64_t now_ms) {
  if (now_ms >= clock.deadline_ms) return ClaimHealth::kDeadlinePast;
  if (now_ms >= clock.last_progress_ms + kNoProgressTimeoutMs) return ClaimHealth::kStalled;
  return ClaimHealth::kRunning;
}

DestinationRelease ReleaseAfterClaimEnd(uint32_t writes_outstanding) {
  return writes_outstanding == 0 ? DestinationRelease::kRelease
                                 : DestinationRelease::kHoldUntilDrained;
}

}  // namespace strata::pool
