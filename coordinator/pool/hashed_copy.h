// One pass over a record's bytes that copies them and computes their XXH3-64
// (docs/pool.md, "Copies through the arena"): the copy goes chunk by chunk,
// and each chunk is hashed from its destination right after it is written,
// while it is still in cache. The bytes hashed are the bytes the caller keeps
// (the arena's on a put, the instance's on a claim), so a peer writing the
// source meanwhile cannot make unchecked bytes pass. Pure: no I/O, no threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "coordinator/pool/slot_table.h"
#include "store/base/status.h"
#include "store/record/checksum.h"

namespace strata::pool {

// Small enough that a chunk just written is still in L2 when it is hashed,
// large enough that the per-chunk calls cost nothing.
inline constexpr size_t kHashedCopyChunkBytes = size_t{64} << 10;

// Copies `src` into `dst` (equal sizes; not overlapping) and feeds `dst`'s
// bytes, in order, to `hash`.
void CopyHashed(std::span<std::byte> dst, std::span<const std::byte> src, Xxh3Stream& hash);

// A record's bytes as they lie in its slots: slot i holds bytes
// [i * slot_bytes, min((i + 1) * slot_bytes, record_bytes)). kCorruption
// when the record is larger than the whole arena (a size from the wire is
// never trusted), the slots cannot hold it, a slot is surplus, named twice,
// or outside an arena of `slot_count` slots.
Status CheckSlotsFit(std::span<const SlotId> slots, uint64_t record_bytes, uint64_t slot_bytes,
                     uint32_t slot_count);

}  // namespace strata::pool
