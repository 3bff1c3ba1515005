// Fuzz target: DecodeRecordHeader (store/record/record_header.h) and the scan
// decisions that trust it (store/record/record_file.h, store/record/record_scan.h).
//
// Input: the 4096 header bytes (fewer is a short file), then optionally a u64
// file size and a u16 byte position. Each input is decoded twice: as given,
// and "resealed" with a correct header checksum so that mutations reach the
// field checks behind the checksum. Properties, each checked with FUZZ_CHECK:
//  - every error is kCorruption naming the header; nothing crashes, reads out
//    of bounds or allocates more than kDecodeAllocBytesMax;
//  - a decode that succeeds as given has a stored checksum equal to XXH3 of
//    bytes [0, 4088), and resealing changes nothing;
//  - a resealed header that decodes re-encodes to the same 4096 bytes, and
//    changing any one byte before the checksum makes it fail;
//  - its extents equal the layout recomputed here in 128-bit arithmetic;
//  - RowStateFromSize classifies any file size as the extents say;
//  - the scan accepts it for a file of a valid size, and the summary a peer
//    sends at join (SummarizeRecord) passes the wire's CheckMessage.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "alloc_meter.h"
#include "fuzz_check.h"
#include "rank_agent/scan_summary.h"
#include "store/record/checksum.h"
#include "store/record/record_file.h"
#include "store/record/record_header.h"
#include "store/record/record_scan.h"
#include "wire/messages.h"

namespace strata::fuzz {
namespace {

// Far above what decoding one header needs (a few vectors and strings).
constexpr size_t kDecodeAllocBytesMax = 64 * 1024;

using u128 = unsigned __int128;

uint64_t LoadU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

void StoreU64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

u128 AlignUp128(u128 v) { return (v + kRecordAlign - 1) / kRecordAlign * kRecordAlign; }

// Decodes under the allocation meter and checks the error contract.
Result<RecordHeader> MeteredDecode(std::span<const std::byte> bytes) {
  Result<RecordHeader> decoded = [&] {
    AllocMeter meter;
    Result<RecordHeader> r = DecodeRecordHeader(bytes);
    FUZZ_CHECK(meter.bytes() <= kDecodeAllocBytesMax,
               "decoding one header allocated " + std::to_string(meter.bytes()) + " bytes");
    return r;
  }();
  if (!decoded.ok()) {
    const Status& s = decoded.status();
    FUZZ_CHECK(s.code() == StatusCode::kCorruption,
               "header error is not kCorruption: " + s.ToString());
    FUZZ_CHECK(s.message().starts_with("record header: "), "error does not name the header");
  }
  return decoded;
}

// The extents recomputed from the shape, without 64-bit wrap-around.
void CheckExtents(const RecordHeader& h, const RecordExtents& e) {
  u128 page_record = 0;
  for (size_t r = 0; r < h.shape.ranks.size(); ++r) {
    if (h.pages_replicated && r > 0) break;
    for (uint64_t plane : h.shape.ranks[r].plane_bytes) page_record += AlignUp128(plane);
  }
  u128 row_segment = 0;
  for (size_t r = 0; r < h.shape.ranks.size(); ++r) {
    if (h.row_replicated && r > 0) break;
    row_segment += AlignUp128(h.shape.ranks[r].row_bytes);
  }
  const u128 checksum_bytes = AlignUp128(u128{8} * h.tail_page_count);
  const u128 page_offset = kRecordHeaderBytes + checksum_bytes;
  const u128 row_offset = page_offset + page_record * h.tail_page_count;
  FUZZ_CHECK(e.checksum_segment_offset == kRecordHeaderBytes, "checksum segment offset");
  FUZZ_CHECK(e.checksum_segment_bytes == checksum_bytes, "checksum segment bytes");
  FUZZ_CHECK(e.page_segment_offset == page_offset, "page segment offset");
  FUZZ_CHECK(
      e.page_record_bytes == page_record && page_record > 0 && page_record % kRecordAlign == 0,
      "page record bytes");
  FUZZ_CHECK(e.row_segment_bytes == row_segment && row_segment > 0, "row segment bytes");
  FUZZ_CHECK(e.row_segment_offset == row_offset, "row segment offset wrapped or is wrong");
  FUZZ_CHECK(u128{e.file_bytes_with_row()} == row_offset + row_segment,
             "file size with row wrapped");
}

void CheckRowState(const RecordExtents& e, uint64_t file_bytes) {
  Result<RowState> state = RowStateFromSize(e, file_bytes);
  if (file_bytes < e.row_segment_offset || file_bytes > e.file_bytes_with_row()) {
    FUZZ_CHECK(!state.ok() && state.status().code() == StatusCode::kCorruption,
               "file of " + std::to_string(file_bytes) + " bytes was not refused");
    return;
  }
  FUZZ_CHECK(state.ok(), "valid file size refused: " + state.status().ToString());
  const RowState expect = file_bytes == e.row_segment_offset      ? RowState::kAbsent
                          : file_bytes == e.file_bytes_with_row() ? RowState::kPresent
                                                                  : RowState::kPartial;
  FUZZ_CHECK(*state == expect, "row state of a " + std::to_string(file_bytes) + " byte file");
}

// What a record directory scan and the join do with an accepted header.
void CheckScan(const RecordHeader& h, const RecordExtents& e, uint64_t file_bytes) {
  FileInfo info;
  info.is_regular = true;
  info.bytes = file_bytes;
  RecordExpectation expect;
  std::memcpy(expect.identity_prefix.data(), h.identity.data(), kIdentityPrefixBytes);
  expect.identity = h.identity;
  expect.fingerprint = h.fingerprint;
  expect.shape = h.shape;
  const auto classified = ClassifyRecordFile(RecordFileName(h.key), h.key, info, h, expect);
  const bool size_ok = file_bytes >= e.row_segment_offset && file_bytes <= e.file_bytes_with_row();
  if (!size_ok) {
    FUZZ_CHECK(std::holds_alternative<RejectedFile>(classified) &&
                   std::get<RejectedFile>(classified).reason == RejectReason::kBadSize,
               "a file of the wrong size was not rejected as bad-size");
    return;
  }
  const auto* rejected = std::get_if<RejectedFile>(&classified);
  FUZZ_CHECK(rejected == nullptr,
             "the scan rejected a valid header: " + (rejected ? rejected->detail : std::string()));
  const ScannedRecord& record = std::get<ScannedRecord>(classified);
  Result<wire::ScanRecord> summary = SummarizeRecord(record);
  FUZZ_CHECK(summary.ok(), "SummarizeRecord failed: " + summary.status().ToString());
  wire::ScanSummary message;
  message.records.push_back(*summary);
  const Status check = wire::CheckMessage(message);
  FUZZ_CHECK(check.ok(),
             "a record the scan accepts cannot be summarized at join: " + check.ToString());
}

void CheckAcceptedHeader(const RecordHeader& h, std::span<const std::byte> bytes,
                         uint64_t file_bytes, uint16_t flip_at) {
  std::array<std::byte, kRecordHeaderBytes> encoded{};
  const Status enc = EncodeRecordHeader(h, encoded);
  FUZZ_CHECK(enc.ok(), "a decoded header does not encode: " + enc.ToString());
  FUZZ_CHECK(std::memcmp(encoded.data(), bytes.data(), kRecordHeaderBytes) == 0,
             "re-encoding a decoded header changed its bytes");

  std::array<std::byte, kRecordHeaderBytes> flipped = encoded;
  const size_t at = flip_at % kHeaderChecksumOffset;
  flipped[at] ^= std::byte{static_cast<uint8_t>(1u << (flip_at >> 12 & 7))};
  Result<RecordHeader> tampered = DecodeRecordHeader(flipped);
  FUZZ_CHECK(!tampered.ok(), "a header with byte " + std::to_string(at) +
                                 " changed still decodes: its checksum was not verified");

  Result<RecordExtents> extents = ComputeExtents(h);
  FUZZ_CHECK(extents.ok(), "ComputeExtents refused a decoded header");
  CheckExtents(h, *extents);
  const RecordExtents& e = *extents;
  for (uint64_t size : {file_bytes, e.row_segment_offset, e.file_bytes_with_row(),
                        e.file_bytes_with_row() + 1, e.row_segment_offset - 1,
                        e.page_segment_offset, e.row_segment_offset + e.row_segment_bytes / 2}) {
    CheckRowState(e, size);
  }
  CheckScan(h, e, file_bytes);
  CheckScan(h, e, e.file_bytes_with_row());

  FUZZ_CHECK(!FirstHeaderDifference(h, h).has_value(), "a header differs from itself");
  FUZZ_CHECK(HeaderAgreementDigest(h).ok(), "HeaderAgreementDigest failed");
}

}  // namespace
}  // namespace strata::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  using namespace strata::fuzz;
  // Exactly the input's bytes, so that ASan sees any read past them.
  const std::vector<std::byte> given(reinterpret_cast<const std::byte*>(data),
                                     reinterpret_cast<const std::byte*>(data) + size);
  Result<RecordHeader> as_given = MeteredDecode(given);
  if (size < kRecordHeaderBytes) {
    FUZZ_CHECK(!as_given.ok(), "a header of " + std::to_string(size) + " bytes decoded");
  }
  if (as_given.ok()) {
    FUZZ_CHECK(LoadU64(data + kHeaderChecksumOffset) ==
                   Xxh3(std::span(given).first(kHeaderChecksumOffset)),
               "decoded a header whose checksum is wrong");
  }

  std::vector<std::byte> resealed(kRecordHeaderBytes);
  std::memcpy(resealed.data(), data, std::min<size_t>(size, kRecordHeaderBytes));
  StoreU64(resealed.data() + kHeaderChecksumOffset,
           Xxh3(std::span(resealed).first(kHeaderChecksumOffset)));
  Result<RecordHeader> sealed = MeteredDecode(resealed);
  if (as_given.ok()) {
    FUZZ_CHECK(sealed.ok() && *sealed == *as_given, "resealing a valid header changed it");
  }
  if (!sealed.ok()) return 0;

  const uint8_t* trailer = data + kRecordHeaderBytes;
  const size_t trailer_bytes = size > kRecordHeaderBytes ? size - kRecordHeaderBytes : 0;
  const Result<RecordExtents> extents = ComputeExtents(*sealed);
  uint64_t file_bytes = extents.ok() ? extents->file_bytes_with_row() : 0;
  if (trailer_bytes >= 8) file_bytes = LoadU64(trailer);
  uint16_t flip_at = 0;
  if (trailer_bytes >= 10) flip_at = static_cast<uint16_t>(trailer[8] | trailer[9] << 8);
  CheckAcceptedHeader(*sealed, resealed, file_bytes, flip_at);
  return 0;
}
