// A copy of a record's bytes and the XXH3-64 of what it wrote, overlapped
// (docs/pool.md, "Copies through the arena"): the copy goes piece by piece,
// and each piece is handed to a HashPipeline right after it is written, so
// the pipeline's thread hashes it while the next piece is copied. The bytes
// hashed are the bytes the caller keeps (the arena's on a put, the
// instance's on a claim), so a peer writing the source meanwhile cannot make
// unchecked bytes pass. No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "coordinator/pool/hash_pipeline.h"
#include "coordinator/pool/slot_table.h"
#include "store/base/status.h"

namespace strata::pool {

// Large enough that handing a piece over (a wake-up of the pipeline's
// thread) costs ~1% of its copy, small enough that the last piece's hash,
// which nothing overlaps, is a small part of a record's.
inline constexpr size_t kHashedCopyPieceBytes = size_t{1} << 20;

// Copies `src` into `dst` (equal sizes; not overlapping) and hands `dst`'s
// bytes, in order, to `hash`; `dst` must stay unchanged until hash.Digest().
void CopyHashed(std::span<std::byte> dst, std::span<const std::byte> src, HashPipeline& hash);

// A record's bytes as they lie in its slots: slot i holds bytes
// [i * slot_bytes, min((i + 1) * slot_bytes, record_bytes)). kCorruption
// when the record is larger than the whole arena (a size from the wire is
// never trusted), the slots cannot hold it, a slot is surplus, named twice,
// or outside an arena of `slot_count` slots.
Status CheckSlotsFit(std::span<const SlotId> slots, uint64_t record_bytes, uint64_t slot_bytes,
                     uint32_t slot_count);

}  // namespace strata::pool
