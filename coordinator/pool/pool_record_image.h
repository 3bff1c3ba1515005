// The bytes of one pooled record (docs/pool.md, "Record images"): what an
// instance puts into arena slots and reads back out of a claim. Pure encode
// and decode; no I/O.
//
//   [0, 8)      magic "STRPREC1"
//   [8, 12)     u32 tail pages (stored page records)
//   [12, 16)    u32 flags: bit 0 parent present, bit 1 pages replicated,
//               bit 2 row replicated; every other bit zero
//   [16, 24)    u64 bytes of one stored page record
//   [24, 32)    u64 bytes of the stored row segment (0: no row)
//   [32, 40)    u64 key tokens           [40, 56)  key digest
//   [56, 64)    u64 parent tokens (0)    [64, 80)  parent digest (zero)
//   [80, 96)    bucket digest
//   [96, 128)   zero
//   [128, ...)  the page records in chain order, then the row segment
//
// Little-endian. The manager's XXH3-64 checksum covers the whole image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "store/base/status.h"
#include "store/tier/record_handover.h"

namespace strata::pool {

inline constexpr uint64_t kRecordImageHeaderBytes = 128;
inline constexpr uint32_t kImageFlagParent = 1u << 0;
inline constexpr uint32_t kImageFlagPagesReplicated = 1u << 1;
inline constexpr uint32_t kImageFlagRowReplicated = 1u << 2;
// Bounds a decoded header must respect (a hostile image cannot overflow).
inline constexpr uint32_t kImageMaxTailPages = 1u << 24;
inline constexpr uint64_t kImageMaxPieceBytes = uint64_t{1} << 40;

// The image of `record`; every page piece must be the same size.
std::vector<std::byte> EncodeRecordImage(const RecordView& record);

// A view over `image` (its spans point into it). kCorruption naming the field
// when the magic, flags, sizes or length are wrong.
Result<RecordView> DecodeRecordImage(std::span<const std::byte> image);

}  // namespace strata::pool
