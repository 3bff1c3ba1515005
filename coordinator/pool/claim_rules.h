// Claims (restores from the pool, seed 2.15 "Restore deadlines"), as pure
// logic: whether the manager admits a claim, the deadlines each side sets, and
// whether a running claim has stalled. Times are milliseconds of any monotone
// clock the caller reads; nothing here reads one.
//
//   byte allowance  = ceil(bytes / 8 MiB/s)
//   claim deadline  = 10 s setup + byte allowance
//   manager's       = min(requested setup, its setup limit, 30 s default) + allowance
//   requester's     = 12 s + allowance(own bytes + bytes of the restores ahead),
//                     counted once a claim slot is available
//   no progress for 3 s fails the claim (the manager's timeout, independent)
//
// A failed or stalled claim still holds its destination until its writes drain.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::pool {

inline constexpr uint64_t kClaimSetupMs = 10'000;
inline constexpr uint64_t kRequesterSetupMs = 12'000;
inline constexpr uint64_t kManagerSetupLimitMsDefault = 30'000;
inline constexpr uint64_t kClaimBytesPerSecond = 8ull << 20;  // conservative
inline constexpr uint64_t kNoProgressTimeoutMs = 3'000;

// Transfer time for `bytes` at kClaimBytesPerSecond, rounded up.
uint64_t ByteAllowanceMs(uint64_t bytes);
// The deadline a claim asks for: kClaimSetupMs + ByteAllowanceMs(bytes).
uint64_t ClaimBudgetMs(uint64_t bytes);
// The manager's: the requested setup clamped to its limit, plus the allowance.
uint64_t ManagerClaimBudgetMs(uint64_t requested_setup_ms, uint64_t setup_limit_ms, uint64_t bytes);
// The requester's: kRequesterSetupMs plus the allowance for its own bytes and
// those of the restores queued ahead of it.
uint64_t RequesterClaimBudgetMs(uint64_t bytes, uint64_t bytes_ahead);

// Where a pooled record is in the manager's index, as a claim sees it.
enum class PooledState : uint8_t { kAbsent, kArriving, kReady };

enum class ClaimAdmission : uint8_t {
  kAdmit,
  kNotFound,  // no such record in the requester's scope
  kNotReady,  // its put has not committed yet
  kBusy,      // claims in flight at the manager's limit: retry after progress
};
std::string_view ClaimAdmissionName(ClaimAdmission admission);

// The manager admits a claim of a committed record while fewer than
// `claims_limit` claims are in flight.
ClaimAdmission AdmitClaim(PooledState state, uint32_t claims_in_flight, uint32_t claims_limit);

// A running claim's clock: all in the caller's milliseconds.
struct ClaimClock {
  uint64_t deadline_ms = 0;       // started + its budget
  uint64_t last_progress_ms = 0;  // start, or the last window that moved
};

enum class ClaimHealth : uint8_t {
  kRunning,
  kStalled,       // no progress for kNoProgressTimeoutMs
  kDeadlinePast,  // the whole budget ran out
};
std::string_view ClaimHealthName(ClaimHealth health);

// The deadline is checked first: a claim past it is kDeadlinePast even if it
// also stalled.
ClaimHealth CheckClaim(const ClaimClock& clock, uint64_t now_ms);

// A failed claim's destination (planes or slots) is released only once no
// write into it is outstanding.
enum class DestinationRelease : uint8_t { kRelease, kHoldUntilDrained };
DestinationRelease ReleaseAfterClaimEnd(uint32_t writes_outstanding);

}  // namespace strata::pool
