// Copies between a record's bytes and the arena slots that hold them, hashed
// as they are written (hashed_copy.h): a put's copy in, whose checksum its commit
// carries, and a claim's copy out, checked against the record's checksum.
// Used by PoolClient on the owner's thread and by ClaimCopier on its own;
// neither keeps anything between calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/hash_pipeline.h"
#include "coordinator/pool/pool_catalog.h"
#include "store/base/status.h"

namespace strata::pool {

// Copies `bytes` into `slots` in order (slot i holds bytes [i * slot_bytes,
// ...)); the checksum of what was written. kCorruption, nothing copied, when
// the slots do not fit the bytes or lie outside the arena.
Result<uint64_t> CopyIntoSlots(const Arena& arena, std::span<const SlotId> slots,
                               std::span<const std::byte> bytes, HashPipeline& hash);

// Copies claimed record `r` out of its slots into `out` (resized to its
// bytes; a buffer already that size is neither reallocated nor zero-filled)
// and checks it against r.checksum in the same pass. kCorruption when it
// fails the check or its slots do not fit it; then `out` holds unchecked
// bytes and must not be used.
Status CopyOutOfSlots(const Arena& arena, const ClaimedRecord& r, std::vector<std::byte>& out,
                      HashPipeline& hash);

}  // namespace strata::pool
