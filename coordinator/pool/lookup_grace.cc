#include "coordinator/pool/lookup_grace.h"

#include <algorithm>

namespace strata::pool {

uint64_t LookupGraceUs(ManagerPlace place, uint64_t round_trip_us) {
  if (place == ManagerPlace::kLocalHost) return kLocalGraceUs;
  const uint64_t measured = round_trip_us * kNetworkGraceRoundTrips;
  return std::clamp(measured, kNetworkGraceMinUs, kNetworkGraceMaxUs);
}

std::string_view AdmissionLookupName(AdmissionLookup decision) {
  switch (decision) {
    case AdmissionLookup::kWithPool: return "with_pool";
    case AdmissionLookup::kWait: return "wait";
    case AdmissionLookup::kLocalOnly: return "local_only";
  }
  return "unknown";
}

AdmissionLookup DecideAdmissionLookup(TicketState ticket, uint64_t begun_us, uint64_t now_us,
                                      uint64_t grace_us) {
  if (ticket == TicketState::kReady) return AdmissionLookup::kWithPool;
  const uint64_t waited = now_us > begun_us ? now_us - begun_us : 0;
  return waited < grace_us ? AdmissionLookup::kWait : AdmissionLookup::kLocalOnly;
}

std::string_view LateAnswerActionName(LateAnswerAction action) {
  switch (action) {
    case LateAnswerAction::kIgnore: return "ignore";
    case LateAnswerAction::kRetryAfterDrain: return "retry_after_drain";
    case LateAnswerAction::kRetryNow: return "retry_now";
  }
  return "unknown";
}

LateAnswerAction DecideLateAnswer(const LateAnswer& a) {
  if (a.pool_consumed <= a.admitted_consumed) return LateAnswerAction::kIgnore;
  if (a.retry_used == RetryUsed::kYes) return LateAnswerAction::kIgnore;
  if (a.prefill == PrefillSubmitted::kYes) return LateAnswerAction::kIgnore;
  if (a.inputs == RequestInputs::kConditioned) return LateAnswerAction::kIgnore;
  return a.drained == LocalWorkDrained::kYes ? LateAnswerAction::kRetryNow
                                             : LateAnswerAction::kRetryAfterDrain;
}

}  // namespace strata::pool
