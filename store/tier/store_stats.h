// StoreStats: every counter the metrics endpoint exports for a store
// (seed 2.11 and 2.15 metric lists). Plain values, copied out by Stats().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace strata {

// Why a store refused an offer for now (kDeferred, kRetry).
enum class RetryCause : uint8_t {
  kInflight,  // a copy of the same key (or its file) is still under way
  kSlabs,     // no free host slots, and none could be made free
  kQueue,     // the transfer or disk job queue is full
  kBudget,    // no room under the disk tier's limit
};
inline constexpr size_t kRetryCauseCount = 4;
// Abandoned retries by cause, indexed by RetryCause.
using RetryCounts = std::array<uint64_t, kRetryCauseCount>;

struct TierStats {
  uint64_t records = 0;           // held now (disk: including reservations)
  uint64_t bytes = 0;             // held now
  uint64_t stored_total = 0;      // records that became resident
  uint64_t evicted_total = 0;     // dropped for capacity
  uint64_t demoted_total = 0;     // of those, let go after the pool accepted a demotion
  uint64_t compacted_total = 0;   // rows dropped, pages kept
  uint64_t expired_total = 0;     // dropped by max age
  uint64_t dropped_io_total = 0;  // discarded after terminal I/O errors
  uint64_t packed_total = 0;      // stored with a replicated page or row share
  uint64_t per_rank_total = 0;    // stored with every rank's share
  uint64_t abandoned_total = 0;   // disk-only stores abandoned (ranks differed)
  uint64_t bytes_in_total = 0;    // copied into this tier
  uint64_t bytes_out_total = 0;   // restored from this tier
};

struct StoreStats {
  // Slab pool.
  uint64_t slots_in_use = 0;
  uint64_t slots_total = 0;  // including intake
  uint64_t intake_slots = 0;
  uint64_t parked_records = 0;  // composite: in DRAM, file not yet written

  // Store outcomes, by kind.
  uint64_t store_queued = 0;
  uint64_t store_present = 0;
  uint64_t store_deferred = 0;
  uint64_t store_retry = 0;
  uint64_t store_oversize = 0;
  uint64_t store_failed = 0;
  // Offers refused for now (kDeferred, kRetry) whose checkpoint the runtime
  // evicted before a re-offer was taken, by the last refusal's cause
  // (RetryLedger).
  RetryCounts retry_abandoned{};

  // Lookups and restores.
  uint64_t lookups = 0;
  uint64_t hits = 0;
  uint64_t reused_tokens = 0;
  uint64_t fetches = 0;
  uint64_t fetch_failed = 0;
  // Restores (or reads into memory) whose record failed its checksums; each
  // such record is removed with its descendants.
  uint64_t fetch_checksum_failures = 0;
  uint64_t fs_full_retries = 0;
  // The disk tier's limit in force (0 without one), and how often a full
  // filesystem lowered it below the configured limit.
  uint64_t disk_limit_bytes = 0;
  uint64_t disk_limit_lowered_total = 0;
  // A composite over the direct transport: records whose file write was
  // started straight from the GPU pages beside their memory copy (the
  // fan-out on store, seed 2.6).
  uint64_t fanout_writes = 0;
  // Of those, writes that failed (out of space, an I/O error, refused):
  // the record stayed in memory, to spill from there later.
  uint64_t fanout_write_failures = 0;

  TierStats memory;
  TierStats disk;
};

}  // namespace strata
