// Eviction below the instance (seed 2.15), as pure logic: where a record goes
// when its tier needs room, what each put outcome does to the local copy, and
// when a record kept local may try the manager again.
//
// The cascade runs DRAM -> NVMe -> manager; a tier the instance lacks is
// skipped. While the manager is absent, busy or unavailable, the last local
// tier's LRU makes room instead (end of chain). The source copy is retained
// until the manager accepts. Only end-of-chain eviction, expiry, oversize and
// terminal I/O errors discard data; no put outcome does.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::pool {

enum class LocalTier : uint8_t { kDram, kNvme };

enum class TierPresence : uint8_t { kAbsent, kPresent };
enum class ManagerState : uint8_t { kNone, kAvailable, kBusy, kUnavailable };

// The instance's chain: which of the seed's memory / disk / pool configurations.
struct ChainShape {
  TierPresence dram = TierPresence::kAbsent;
  TierPresence nvme = TierPresence::kAbsent;
  ManagerState manager = ManagerState::kNone;
};

enum class CascadeHop : uint8_t {
  kToNvme,      // demote to local disk
  kToManager,   // put to the pool manager, keeping the source until accepted
  kEndOfChain,  // this tier is the local end: its LRU discards (kEndOfChain drop)
};
std::string_view CascadeHopName(CascadeHop hop);

// Where a record leaving `from` goes.
CascadeHop NextHop(LocalTier from, const ChainShape& chain);

enum class DropReason : uint8_t { kEndOfChain, kExpired, kOversize, kIoError };
// The metric label (strata_host_cache_dropped_total{reason}).
std::string_view DropReasonName(DropReason reason);

// Everything that can happen to a record on its way down.
enum class PutEvent : uint8_t {
  kAccepted,         // the manager committed it
  kQueueFull,        // no room in a local queue to start the move
  kRefused,          // the manager said no (busy, no room, wrong scope)
  kSubmissionError,  // the put could not be sent
  kTransferFailed,   // a started handover failed
  kManagerLost,      // the connection went while it waited or moved
  kEndOfChainEvict,  // the last local tier's LRU chose it
  kExpired,          // older than the tier's maximum age
  kOversize,         // its footprint can never fit
  kTerminalIoError,  // the tier's bytes are unreadable for good
};
std::string_view PutEventName(PutEvent event);

enum class PutAction : uint8_t {
  kReleaseSource,       // accepted: the local copy may go
  kDelay,               // keep it parked; select again on the next pass
  kRetryAfterProgress,  // keep it local; retry after the manager reports progress
  kRetryAfterBackoff,   // keep it local; retry after kPutBackoffMs
  kDiscard,             // the data goes (drop carries why)
};
std::string_view PutActionName(PutAction action);

// A short back-off after refusals of submission and repeated failures.
inline constexpr uint64_t kPutBackoffMs = 1'000;
// Consecutive handover failures of one record before it backs off.
inline constexpr uint32_t kPutFailuresBeforeBackoff = 3;

struct PutDecision {
  PutAction action = PutAction::kDelay;
  std::optional<DropReason> drop;  // set exactly when action is kDiscard
  friend bool operator==(const PutDecision&, const PutDecision&) = default;
};

// `failures` counts this record's consecutive kTransferFailed, this one included.
PutDecision DecidePut(PutEvent event, uint32_t failures);

// When a record kept local may be selected for the manager again.
struct RetryGate {
  uint64_t progress_epoch = 0;  // the manager's progress count when it was refused
  uint64_t not_before_ms = 0;   // 0: no back-off
};

// The gate a decision sets, from the manager's progress count and the time now.
RetryGate GateFor(PutAction action, uint64_t progress_epoch, uint64_t now_ms);

// kRetryAfterProgress waits for the epoch to move; kRetryAfterBackoff for the
// time; either passes once the manager made progress since.
bool MayRetry(const RetryGate& gate, uint64_t progress_epoch, uint64_t now_ms);

}  // namespace strata::pool
