// Attaching an instance to its pool (seed 2.15, startup and reconnects), as
// pure logic. Times are milliseconds of a monotone clock the caller reads.
//
//   - At startup the instance waits up to kStartupAttachWaitMs for the
//     manager's first Hello, retrying silently. At the deadline it prints one
//     warning and runs on local tiers; it never attaches later. A manager
//     that answered and refused it (a rejected Hello: another version, the
//     wrong job secret; or an address or secret this side cannot use) ends
//     the wait at once: retrying cannot change that answer.
//   - An instance that attached retries after a lost connection.
//   - A new Hello after a reconnect may reuse the registrations of the last
//     one only when the generation and every region's size are unchanged;
//     otherwise sharing is disabled with one warning until a restart.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/base/status.h"

namespace strata::pool {

inline constexpr uint64_t kStartupAttachWaitMs = 10'000;

enum class AttachPhase : uint8_t {
  kStartup,       // never attached yet
  kAttached,      // attached once; the connection may be lost since
  kLocalForever,  // gave up at startup: local tiers only
};

enum class AttachStep : uint8_t {
  kRetrySilently,      // startup, inside the wait
  kGiveUpWithWarning,  // startup deadline: one warning, then kLocalForever
  kRetry,              // attached before: reconnect
  kStayLocal,          // gave up already
};
std::string_view AttachStepName(AttachStep step);

// Why a connection attempt failed: nobody answered in time (kUnreachable),
// or the manager or this side's own settings refused it (kRefused:
// PoolClient::Connect's kFailedPrecondition or kInvalidArgument).
enum class AttachFailure : uint8_t { kUnreachable, kRefused };
AttachFailure AttachFailureOf(const Status& connect_error);

// What to do after a failed connection attempt.
AttachStep AfterFailedAttach(AttachPhase phase, uint64_t started_ms, uint64_t now_ms,
                             AttachFailure failure = AttachFailure::kUnreachable);

// What a Hello says about the manager's memory.
struct ArenaShape {
  uint64_t generation = 0;
  std::vector<uint64_t> region_bytes;
  friend bool operator==(const ArenaShape&, const ArenaShape&) = default;
};

enum class Reattach : uint8_t { kReuseRegistrations, kDisableSharing };

// kReuseRegistrations only for the same generation and region sizes.
Reattach DecideReattach(const ArenaShape& registered, const ArenaShape& announced);

// The one warning of kDisableSharing, naming what changed.
std::string ReattachWarning(const ArenaShape& registered, const ArenaShape& announced);

}  // namespace strata::pool
