// The 4 KiB header of a record file and the file's segment extents
// (docs/formats.md, "Record files"). Pure encode / decode / validate: no I/O.
//
//   [0, 4096)                       header (this file)
//   [4096, page_segment_offset)     checksum segment: u64 xxh3 per stored page
//                                   record, zero-padded to 4 KiB
//   [page_segment_offset, row_segment_offset)
//                                   page segment: tail_page_count page records
//                                   (store/record/record_layout.h)
//   [row_segment_offset, +row_segment_bytes)
//                                   row segment; present iff the file covers it
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "store/record/fingerprint.h"
#include "store/record/record_layout.h"

namespace strata {

inline constexpr uint64_t kRecordHeaderBytes = 4096;
inline constexpr std::array<char, 8> kRecordMagic = {'S', 'T', 'R', 'A', 'T', 'C', 'K', 'P'};
inline constexpr uint32_t kRecordFormatVersion = 1;

// Flag bits (u32 at kFlagsOffset). Every other bit must be zero.
inline constexpr uint32_t kFlagPagesReplicated = 1u << 31;
inline constexpr uint32_t kFlagRowReplicated = 1u << 30;
inline constexpr uint32_t kFlagHasParent = 1u << 0;

// Byte offsets of the fixed header fields.
inline constexpr size_t kMagicOffset = 0;                    // 8 bytes "STRATCKP"
inline constexpr size_t kVersionOffset = 8;                  // u32
inline constexpr size_t kFlagsOffset = 12;                   // u32
inline constexpr size_t kHeaderBytesOffset = 16;             // u32, = 4096
inline constexpr size_t kRankCountOffset = 20;               // u32
inline constexpr size_t kIdentityOffset = 24;                // 32 bytes
inline constexpr size_t kFingerprintOffset = 56;             // 16 bytes
inline constexpr size_t kKeyConsumedOffset = 72;             // u64
inline constexpr size_t kKeyDigestOffset = 80;               // 16 bytes
inline constexpr size_t kParentConsumedOffset = 96;          // u64 (0 without parent)
inline constexpr size_t kParentDigestOffset = 104;           // 16 bytes (0 without parent)
inline constexpr size_t kBucketDigestOffset = 120;           // 16 bytes
inline constexpr size_t kPageTokensOffset = 136;             // u32
inline constexpr size_t kTailPageCountOffset = 140;          // u32
inline constexpr size_t kChecksumSegmentOffsetOffset = 144;  // u64, = 4096
inline constexpr size_t kPageSegmentOffsetOffset = 152;      // u64
inline constexpr size_t kRowSegmentOffsetOffset = 160;       // u64
inline constexpr size_t kPageRecordBytesOffset = 168;        // u64, stored bytes per page record
inline constexpr size_t kRowSegmentBytesOffset = 176;        // u64, stored row segment bytes
inline constexpr size_t kRowChecksumOffset = 184;      // u64 xxh3 (0 when written without row)
inline constexpr size_t kCreatedOffset = 192;          // u64 ns since the Unix epoch
inline constexpr size_t kRankTableOffset = 256;        // per-rank sizes, see below
inline constexpr size_t kHeaderChecksumOffset = 4088;  // u64 xxh3 of bytes [0, 4088)
// Each rank table entry: u32 page_plane_count, u32 zero, u64 row_bytes, then
// u64 unit bytes per page plane in geometry order.
inline constexpr size_t kRankEntryFixedBytes = 16;
inline constexpr size_t kRankTableCapacityBytes = kHeaderChecksumOffset - kRankTableOffset;

// Sanity bounds a decoded header must respect (far above any real model; they
// keep a hostile header from overflowing size arithmetic).
inline constexpr uint64_t kMaxPlaneBytes = uint64_t{1} << 32;
inline constexpr uint64_t kMaxRowBytes = uint64_t{1} << 40;
inline constexpr uint32_t kMaxTailPages = 1u << 24;

// Sizes of one rank's page planes (geometry order) and row, unpadded.
struct RankShape {
  std::vector<uint64_t> plane_bytes;
  uint64_t row_bytes = 0;
  friend bool operator==(const RankShape&, const RankShape&) = default;
};

// Everything about a geometry a record file records: enough to lay the file
// out without knowing plane names.
struct RecordShape {
  uint32_t page_tokens = 0;
  std::vector<RankShape> ranks;
  uint32_t rank_count() const { return static_cast<uint32_t>(ranks.size()); }
  friend bool operator==(const RecordShape&, const RecordShape&) = default;
};

RecordShape ShapeOf(const CacheGeometry& geometry);
// A geometry with the shape's sizes and generated plane names ("p0", "p1", …);
// for RecordLayout, never for fingerprints.
CacheGeometry GeometryOf(const RecordShape& shape);

struct RecordHeader {
  uint32_t format_version = kRecordFormatVersion;
  bool pages_replicated = false;
  bool row_replicated = false;
  NamespaceIdentity identity{};
  LayoutFingerprint fingerprint{};
  PrefixKey key;
  std::optional<PrefixKey> parent;  // none for a root record
  Digest128 bucket{};
  uint32_t tail_page_count = 0;
  RecordShape shape;
  uint64_t row_checksum = 0;  // xxh3 of the stored row segment; 0 when written without row
  uint64_t created_unix_ns = 0;

  friend bool operator==(const RecordHeader&, const RecordHeader&) = default;
};

// Where each segment of a record file lies, derived from a header.
struct RecordExtents {
  uint64_t checksum_segment_offset = 0;
  uint64_t checksum_segment_bytes = 0;  // padded
  uint64_t page_segment_offset = 0;
  uint64_t page_record_bytes = 0;  // stored bytes of one page record
  uint64_t row_segment_offset = 0;
  uint64_t row_segment_bytes = 0;  // stored bytes of the row segment
  uint64_t file_bytes_without_row() const { return row_segment_offset; }
  uint64_t file_bytes_with_row() const { return row_segment_offset + row_segment_bytes; }
  uint64_t page_offset(uint32_t page) const {
    return page_segment_offset + uint64_t{page} * page_record_bytes;
  }
};

// Checks the header's version, key (consumed > 0), shape, flags and key
// relations and computes its extents. Errors (kCorruption) name the
// offending field.
Result<RecordExtents> ComputeExtents(const RecordHeader& header);

// Encodes a header whose ComputeExtents succeeds into exactly 4096 bytes.
Status EncodeRecordHeader(const RecordHeader& header, std::span<std::byte> out);

// Decodes and validates 4096 header bytes: magic, version, header checksum,
// flags, sizes and the stored offsets against ComputeExtents. Errors are
// kCorruption and name the field that is wrong.
Result<RecordHeader> DecodeRecordHeader(std::span<const std::byte> bytes);

// The first field in which `actual` differs from `expected`, ignoring the
// creation time, or nullopt when they agree. For checking an opened file
// against the record the caller indexed.
std::optional<std::string> FirstHeaderDifference(const RecordHeader& expected,
                                                 const RecordHeader& actual);

// BLAKE2b-128 of the encoded header with its layout fingerprint, row checksum
// and creation time zeroed: what every rank's file of one record must share
// when ranks run on separate hosts (the fingerprint covers the rank, the row
// bytes and write time differ per rank). Ranks keep a record at join only
// when these digests agree (seed 2.14). Errors as EncodeRecordHeader.
Result<Digest128> HeaderAgreementDigest(const RecordHeader& header);

}  // namespace strata
