#include "store/record/record_header.h"

#include <cstring>

#include "store/base/digest.h"
#include "store/record/checksum.h"

namespace strata {

namespace {

void PutU32(std::span<std::byte> out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<std::byte>(v >> (8 * i));
}
void PutU64(std::span<std::byte> out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + i] = static_cast<std::byte>(v >> (8 * i));
}
template <size_t N>
void PutBytes(std::span<std::byte> out, size_t at, const std::array<uint8_t, N>& v) {
  std::memcpy(out.data() + at, v.data(), N);
}
uint32_t GetU32(std::span<const std::byte> in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{std::to_integer<uint8_t>(in[at + i])} << (8 * i);
  return v;
}
uint64_t GetU64(std::span<const std::byte> in, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{std::to_integer<uint8_t>(in[at + i])} << (8 * i);
  return v;
}
template <size_t N>
void GetBytes(std::span<const std::byte> in, size_t at, std::array<uint8_t, N>& v) {
  std::memcpy(v.data(), in.data() + at, N);
}

Status Bad(const std::string& what) { return Status::Corruption("record header: " + what); }

std::string Num(uint64_t v) { return std::to_string(v); }

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
bool AddOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

uint64_t RankTableBytes(const RecordShape& shape) {
  uint64_t total = 0;
  for (const RankShape& r : shape.ranks) {
    total += kRankEntryFixedBytes + 8 * uint64_t{r.plane_bytes.size()};
  }
  return total;
}

Status ValidateShape(const RecordShape& shape) {
  if (shape.page_tokens == 0) return Bad("page_tokens is 0");
  if (shape.ranks.empty()) return Bad("rank_count is 0");
  for (size_t r = 0; r < shape.ranks.size(); ++r) {
    const RankShape& rank = shape.ranks[r];
    const std::string where = "rank " + Num(r) + ": ";
    if (rank.plane_bytes.empty()) return Bad(where + "page_plane_count is 0");
    for (size_t p = 0; p < rank.plane_bytes.size(); ++p) {
      if (rank.plane_bytes[p] == 0 || rank.plane_bytes[p] > kMaxPlaneBytes) {
        return Bad(where + "plane " + Num(p) + " unit bytes " + Num(rank.plane_bytes[p]) +
                   " outside [1, " + Num(kMaxPlaneBytes) + "]");
      }
    }
    if (rank.row_bytes == 0 || rank.row_bytes > kMaxRowBytes) {
      return Bad(where + "row bytes " + Num(rank.row_bytes) + " outside [1, " + Num(kMaxRowBytes) +
                 "]");
    }
  }
  if (RankTableBytes(shape) > kRankTableCapacityBytes) {
    return Bad("rank table of " + Num(RankTableBytes(shape)) + " bytes exceeds the header's " +
               Num(kRankTableCapacityBytes));
  }
  return Status::Ok();
}

}  // namespace

RecordShape ShapeOf(const CacheGeometry& geometry) {
  RecordShape shape;
  shape.page_tokens = geometry.page_tokens;
  for (const RankGeometry& g : geometry.ranks) {
    RankShape r;
    for (const PlaneSpec& p : g.page_planes) r.plane_bytes.push_back(p.unit_bytes);
    r.row_bytes = g.row.unit_bytes;
    shape.ranks.push_back(std::move(r));
  }
  return shape;
}

CacheGeometry GeometryOf(const RecordShape& shape) {
  CacheGeometry g;
  g.page_tokens = shape.page_tokens;
  for (const RankShape& r : shape.ranks) {
    RankGeometry rank;
    rank.row = {"row", r.row_bytes};
    for (size_t p = 0; p < r.plane_bytes.size(); ++p) {
      rank.page_planes.push_back({"p" + std::to_string(p), r.plane_bytes[p]});
    }
    g.ranks.push_back(std::move(rank));
  }
  return g;
}

Result<RecordExtents> ComputeExtents(const RecordHeader& header) {
  // The writer refuses what the reader refuses: a version this build does not
  // read, and a key that consumed no token (no record has one, and the join's
  // scan summary could not carry it: the rank would fail to join).
  if (header.format_version != kRecordFormatVersion) {
    return Bad("unsupported format version " + Num(header.format_version) + " (this build writes " +
               Num(kRecordFormatVersion) + ")");
  }
  if (header.key.consumed == 0) return Bad("key consumed count is 0");
  STRATA_RETURN_IF_ERROR(ValidateShape(header.shape));
  if (header.tail_page_count > kMaxTailPages) {
    return Bad("tail_page_count " + Num(header.tail_page_count) + " exceeds " + Num(kMaxTailPages));
  }
  if (header.parent && header.parent->consumed >= header.key.consumed) {
    return Bad("parent consumed count " + Num(header.parent->consumed) +
               " is not below the key's " + Num(header.key.consumed));
  }
  const RecordLayout layout(GeometryOf(header.shape));
  if (header.pages_replicated && !layout.pages_can_replicate()) {
    return Bad("pages-replicated flag set but ranks have different page planes");
  }
  if (header.row_replicated && !layout.rows_can_replicate()) {
    return Bad("row-replicated flag set but ranks have different row sizes");
  }
  RecordExtents e;
  e.checksum_segment_offset = kRecordHeaderBytes;
  e.checksum_segment_bytes = AlignUp(8 * uint64_t{header.tail_page_count});
  e.page_segment_offset = e.checksum_segment_offset + e.checksum_segment_bytes;
  e.page_record_bytes = layout.stored_page_record_bytes(header.pages_replicated);
  e.row_segment_bytes = layout.stored_row_segment_bytes(header.row_replicated);
  uint64_t page_segment_bytes = 0;
  if (MulOverflows(e.page_record_bytes, header.tail_page_count, &page_segment_bytes) ||
      AddOverflows(e.page_segment_offset, page_segment_bytes, &e.row_segment_offset) ||
      e.row_segment_offset + e.row_segment_bytes < e.row_segment_offset) {
    return Bad("record size overflows 64 bits");
  }
  return e;
}

Status EncodeRecordHeader(const RecordHeader& header, std::span<std::byte> out) {
  STRATA_ASSERT(out.size() == kRecordHeaderBytes, "header buffer must be 4096 bytes");
  STRATA_ASSIGN_OR_RETURN(RecordExtents e, ComputeExtents(header));
  std::memset(out.data(), 0, out.size());
  std::memcpy(out.data() + kMagicOffset, kRecordMagic.data(), kRecordMagic.size());
  PutU32(out, kVersionOffset, header.format_version);
  uint32_t flags = 0;
  if (header.pages_replicated) flags |= kFlagPagesReplicated;
  if (header.row_replicated) flags |= kFlagRowReplicated;
  if (header.parent) flags |= kFlagHasParent;
  PutU32(out, kFlagsOffset, flags);
  PutU32(out, kHeaderBytesOffset, static_cast<uint32_t>(kRecordHeaderBytes));
  PutU32(out, kRankCountOffset, header.shape.rank_count());
  PutBytes(out, kIdentityOffset, header.identity);
  PutBytes(out, kFingerprintOffset, header.fingerprint);
  PutU64(out, kKeyConsumedOffset, header.key.consumed);
  PutBytes(out, kKeyDigestOffset, header.key.digest);
  if (header.parent) {
    PutU64(out, kParentConsumedOffset, header.parent->consumed);
    PutBytes(out, kParentDigestOffset, header.parent->digest);
  }
  PutBytes(out, kBucketDigestOffset, header.bucket);
  PutU32(out, kPageTokensOffset, header.shape.page_tokens);
  PutU32(out, kTailPageCountOffset, header.tail_page_count);
  PutU64(out, kChecksumSegmentOffsetOffset, e.checksum_segment_offset);
  PutU64(out, kPageSegmentOffsetOffset, e.page_segment_offset);
  PutU64(out, kRowSegmentOffsetOffset, e.row_segment_offset);
  PutU64(out, kPageRecordBytesOffset, e.page_record_bytes);
  PutU64(out, kRowSegmentBytesOffset, e.row_segment_bytes);
  PutU64(out, kRowChecksumOffset, header.row_checksum);
  PutU64(out, kCreatedOffset, header.created_unix_ns);
  size_t at = kRankTableOffset;
  for (const RankShape& r : header.shape.ranks) {
    PutU32(out, at, static_cast<uint32_t>(r.plane_bytes.size()));
    PutU64(out, at + 8, r.row_bytes);
    at += kRankEntryFixedBytes;
    for (uint64_t b : r.plane_bytes) {
      PutU64(out, at, b);
      at += 8;
    }
  }
  PutU64(out, kHeaderChecksumOffset, Xxh3(out.first(kHeaderChecksumOffset)));
  return Status::Ok();
}

namespace {

// Reads the rank table after its entry count has been checked against the
// table's capacity one entry at a time.
Result<RecordShape> DecodeShape(std::span<const std::byte> in, uint32_t rank_count,
                                uint32_t page_tokens) {
  RecordShape shape;
  shape.page_tokens = page_tokens;
  size_t at = kRankTableOffset;
  for (uint32_t r = 0; r < rank_count; ++r) {
    if (at + kRankEntryFixedBytes > kHeaderChecksumOffset) {
      return Bad("rank table overruns the header at rank " + Num(r) + " of " + Num(rank_count));
    }
    const uint32_t planes = GetU32(in, at);
    if (GetU32(in, at + 4) != 0) return Bad("rank " + Num(r) + ": reserved field is not zero");
    RankShape rank;
    rank.row_bytes = GetU64(in, at + 8);
    at += kRankEntryFixedBytes;
    if (planes == 0) return Bad("rank " + Num(r) + ": page_plane_count is 0");
    if (uint64_t{planes} * 8 > kHeaderChecksumOffset - at) {
      return Bad("rank " + Num(r) + ": " + Num(planes) + " page planes overrun the header");
    }
    for (uint32_t p = 0; p < planes; ++p) {
      rank.plane_bytes.push_back(GetU64(in, at));
      at += 8;
    }
    shape.ranks.push_back(std::move(rank));
  }
  for (size_t i = at; i < kHeaderChecksumOffset; ++i) {
    if (in[i] != std::byte{0}) return Bad("nonzero byte at " + Num(i) + " after the rank table");
  }
  return shape;
}

Status CheckStoredOffset(std::span<const std::byte> in, size_t at, const char* name,
                         uint64_t expect) {
  uint64_t stored = GetU64(in, at);
  if (stored != expect) {
    return Bad(std::string(name) + " is " + Num(stored) + ", the header's sizes give " +
               Num(expect));
  }
  return Status::Ok();
}

}  // namespace

Result<RecordHeader> DecodeRecordHeader(std::span<const std::byte> in) {
  if (in.size() < kRecordHeaderBytes) {
    return Bad("only " + Num(in.size()) + " of " + Num(kRecordHeaderBytes) + " bytes");
  }
  in = in.first(kRecordHeaderBytes);
  if (std::memcmp(in.data() + kMagicOffset, kRecordMagic.data(), kRecordMagic.size()) != 0) {
    return Bad("bad magic (not a STRATCKP record file)");
  }
  RecordHeader h;
  h.format_version = GetU32(in, kVersionOffset);
  if (h.format_version != kRecordFormatVersion) {
    return Bad("unsupported format version " + Num(h.format_version) + " (this build reads " +
               Num(kRecordFormatVersion) + ")");
  }
  const uint64_t stored_sum = GetU64(in, kHeaderChecksumOffset);
  const uint64_t computed_sum = Xxh3(in.first(kHeaderChecksumOffset));
  if (stored_sum != computed_sum) return Bad("header checksum mismatch");
  const uint32_t flags = GetU32(in, kFlagsOffset);
  constexpr uint32_t kKnownFlags = kFlagPagesReplicated | kFlagRowReplicated | kFlagHasParent;
  if ((flags & ~kKnownFlags) != 0) return Bad("unknown flag bits " + Num(flags & ~kKnownFlags));
  h.pages_replicated = (flags & kFlagPagesReplicated) != 0;
  h.row_replicated = (flags & kFlagRowReplicated) != 0;
  if (GetU32(in, kHeaderBytesOffset) != kRecordHeaderBytes) {
    return Bad("header_bytes is " + Num(GetU32(in, kHeaderBytesOffset)) + ", expected 4096");
  }
  for (size_t i = kCreatedOffset + 8; i < kRankTableOffset; ++i) {
    if (in[i] != std::byte{0}) return Bad("reserved byte " + Num(i) + " is not zero");
  }
  GetBytes(in, kIdentityOffset, h.identity);
  GetBytes(in, kFingerprintOffset, h.fingerprint);
  h.key.consumed = GetU64(in, kKeyConsumedOffset);
  GetBytes(in, kKeyDigestOffset, h.key.digest);
  PrefixKey parent;
  parent.consumed = GetU64(in, kParentConsumedOffset);
  GetBytes(in, kParentDigestOffset, parent.digest);
  if ((flags & kFlagHasParent) != 0) {
    h.parent = parent;
  } else if (parent != PrefixKey{}) {
    return Bad("parent key set without the has-parent flag");
  }
  GetBytes(in, kBucketDigestOffset, h.bucket);
  h.tail_page_count = GetU32(in, kTailPageCountOffset);
  h.row_checksum = GetU64(in, kRowChecksumOffset);
  h.created_unix_ns = GetU64(in, kCreatedOffset);
  STRATA_ASSIGN_OR_RETURN(
      h.shape, DecodeShape(in, GetU32(in, kRankCountOffset), GetU32(in, kPageTokensOffset)));
  STRATA_ASSIGN_OR_RETURN(RecordExtents e, ComputeExtents(h));
  STRATA_RETURN_IF_ERROR(CheckStoredOffset(in, kChecksumSegmentOffsetOffset,
                                           "checksum_segment_offset", e.checksum_segment_offset));
  STRATA_RETURN_IF_ERROR(CheckStoredOffset(in, kPageSegmentOffsetOffset, "page_segment_offset",
                                           e.page_segment_offset));
  STRATA_RETURN_IF_ERROR(
      CheckStoredOffset(in, kRowSegmentOffsetOffset, "row_segment_offset", e.row_segment_offset));
  STRATA_RETURN_IF_ERROR(
      CheckStoredOffset(in, kPageRecordBytesOffset, "page_record_bytes", e.page_record_bytes));
  STRATA_RETURN_IF_ERROR(
      CheckStoredOffset(in, kRowSegmentBytesOffset, "row_segment_bytes", e.row_segment_bytes));
  return h;
}

std::optional<std::string> FirstHeaderDifference(const RecordHeader& expected,
                                                 const RecordHeader& actual) {
  if (expected.format_version != actual.format_version) return "format_version";
  if (expected.pages_replicated != actual.pages_replicated) return "pages-replicated flag";
  if (expected.row_replicated != actual.row_replicated) return "row-replicated flag";
  if (expected.identity != actual.identity) return "namespace identity";
  if (expected.fingerprint != actual.fingerprint) return "layout fingerprint";
  if (expected.key != actual.key) return "key";
  if (expected.parent != actual.parent) return "parent key";
  if (expected.bucket != actual.bucket) return "bucket digest";
  if (expected.tail_page_count != actual.tail_page_count) return "tail_page_count";
  if (expected.shape.page_tokens != actual.shape.page_tokens) return "page_tokens";
  if (expected.shape != actual.shape) return "plane or row sizes";
  if (expected.row_checksum != actual.row_checksum) return "row checksum";
  return std::nullopt;
}

Result<Digest128> HeaderAgreementDigest(const RecordHeader& header) {
  RecordHeader shared = header;
  shared.fingerprint = {};
  shared.row_checksum = 0;
  shared.created_unix_ns = 0;
  std::array<std::byte, kRecordHeaderBytes> bytes{};
  STRATA_RETURN_IF_ERROR(EncodeRecordHeader(shared, bytes));
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  return Blake2b128(std::span(data, bytes.size()));
}

}  // namespace strata
