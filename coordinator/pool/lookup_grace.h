// Pool lookups at admission (seed 2.15, "Lookups"), as pure logic. A ticket is
// begun when a request reaches the worker and never waits for the manager.
// Admission uses pool candidates only when the ticket is ready; a pending one
// holds admission for at most the grace period, after which admission goes
// ahead on local results. A late answer with a longer prefix may retry
// admission once. Times are microseconds of a monotone clock the caller reads.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::pool {

// A manager on this host.
inline constexpr uint64_t kLocalGraceUs = 2'000;
// A network manager: kNetworkGraceRoundTrips measured control round trips,
// clamped to [kNetworkGraceMinUs, kNetworkGraceMaxUs].
inline constexpr uint64_t kNetworkGraceRoundTrips = 4;
inline constexpr uint64_t kNetworkGraceMinUs = 2'000;
inline constexpr uint64_t kNetworkGraceMaxUs = 250'000;

enum class ManagerPlace : uint8_t { kLocalHost, kNetwork };

// The grace period; round_trip_us is ignored for kLocalHost.
uint64_t LookupGraceUs(ManagerPlace place, uint64_t round_trip_us);

enum class TicketState : uint8_t { kPending, kReady };

enum class AdmissionLookup : uint8_t {
  kWithPool,   // the ticket is ready: pool candidates join the local ones
  kWait,       // pending and inside its grace: hold admission
  kLocalOnly,  // pending past its grace: admit from local tiers
};
std::string_view AdmissionLookupName(AdmissionLookup decision);

AdmissionLookup DecideAdmissionLookup(TicketState ticket, uint64_t begun_us, uint64_t now_us,
                                      uint64_t grace_us);

// What happened to an admitted request by the time its late answer came.
enum class RetryUsed : uint8_t { kNo, kYes };
enum class PrefillSubmitted : uint8_t { kNo, kYes };
enum class RequestInputs : uint8_t { kText, kConditioned };  // conditioned: e.g. images
enum class LocalWorkDrained : uint8_t { kNo, kYes };         // its initialization or restore

struct LateAnswer {
  uint64_t pool_consumed = 0;      // the late answer's endpoint
  uint64_t admitted_consumed = 0;  // what admission used (0: nothing)
  RetryUsed retry_used = RetryUsed::kNo;
  PrefillSubmitted prefill = PrefillSubmitted::kNo;
  RequestInputs inputs = RequestInputs::kText;
  LocalWorkDrained drained = LocalWorkDrained::kNo;
};

enum class LateAnswerAction : uint8_t {
  kIgnore,           // keep the original decision
  kRetryAfterDrain,  // retry once the admitted initialization or restore drains
  kRetryNow,         // retry ordinary admission (no new grace period)
};
std::string_view LateAnswerActionName(LateAnswerAction action);

// Retries only a text request whose late answer is longer, that has not retried
// and whose prefill has not been submitted.
LateAnswerAction DecideLateAnswer(const LateAnswer& answer);

}  // namespace strata::pool
