#include "store/record/record_header.h"

#include <gtest/gtest.h>

#include "launch/presets.h"
#include "store/base/aligned_buffer.h"
#include "store/record/checksum.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;
using testing::MakeGeometry;

RecordHeader SampleHeader() {
  RecordHeader h;
  h.identity = testing::TestIdentity();
  CacheGeometry g = MakeGeometry(64, {512, 16384, 4097}, 3 * 4096 + 5, 2);
  h.fingerprint = ComputeLayoutFingerprint(g);
  h.key = KeyOf(640);
  h.parent = KeyOf(512);
  h.bucket = KeyOf(640, 9).digest;
  h.tail_page_count = 2;
  h.shape = ShapeOf(g);
  h.row_checksum = 0x1122334455667788ULL;
  h.created_unix_ns = 0x0102030405060708ULL;
  return h;
}

std::vector<std::byte> Encode(const RecordHeader& h) {
  std::vector<std::byte> bytes(kRecordHeaderBytes);
  EXPECT_TRUE(EncodeRecordHeader(h, bytes).ok());
  return bytes;
}

uint64_t LeAt(const std::vector<std::byte>& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{std::to_integer<uint8_t>(b[at + i])} << (8 * i);
  return v;
}

void PutLe(std::vector<std::byte>& b, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b[at + i] = static_cast<std::byte>(v >> (8 * i));
}

// Rewrites the header checksum so a test can reach the check after it.
void Reseal(std::vector<std::byte>& b) {
  PutLe(b, kHeaderChecksumOffset, Xxh3(std::span(b).first(kHeaderChecksumOffset)), 8);
}

std::string DecodeError(const std::vector<std::byte>& b) {
  Result<RecordHeader> h = DecodeRecordHeader(b);
  EXPECT_FALSE(h.ok());
  if (!h.ok()) {
    EXPECT_EQ(h.status().code(), StatusCode::kCorruption);
  }
  return h.ok() ? "" : h.status().message();
}

TEST(RecordHeaderTest, RoundTripsEveryField) {
  RecordHeader h = SampleHeader();
  h.pages_replicated = true;
  h.row_replicated = true;
  Result<RecordHeader> back = DecodeRecordHeader(Encode(h));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, h);
}

TEST(RecordHeaderTest, RoundTripsARootRecord) {
  RecordHeader h = SampleHeader();
  h.parent.reset();
  Result<RecordHeader> back = DecodeRecordHeader(Encode(h));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->parent.has_value());
  EXPECT_EQ(*back, h);
}

TEST(RecordHeaderTest, MagicAndVersionLeadTheHeader) {
  std::vector<std::byte> b = Encode(SampleHeader());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 8), "STRATCKP");
  EXPECT_EQ(LeAt(b, kVersionOffset, 4), kRecordFormatVersion);
  EXPECT_EQ(LeAt(b, kHeaderBytesOffset, 4), 4096u);
}

TEST(RecordHeaderTest, FlagBitsAreThirtyOneThirtyAndZero) {
  RecordHeader h = SampleHeader();
  EXPECT_EQ(LeAt(Encode(h), kFlagsOffset, 4), kFlagHasParent);
  h.pages_replicated = true;
  EXPECT_EQ(LeAt(Encode(h), kFlagsOffset, 4), (1u << 31) | 1u);
  h.pages_replicated = false;
  h.row_replicated = true;
  h.parent.reset();
  EXPECT_EQ(LeAt(Encode(h), kFlagsOffset, 4), 1u << 30);
}

TEST(RecordHeaderTest, IdentityAndFingerprintAreStoredVerbatim) {
  RecordHeader h = SampleHeader();
  std::vector<std::byte> b = Encode(h);
  EXPECT_EQ(std::memcmp(b.data() + kIdentityOffset, h.identity.data(), 32), 0);
  EXPECT_EQ(std::memcmp(b.data() + kFingerprintOffset, h.fingerprint.data(), 16), 0);
  EXPECT_EQ(LeAt(b, kRankCountOffset, 4), 2u);
}

TEST(RecordHeaderTest, KeysAndBucketAreLittleEndianCountThenDigest) {
  RecordHeader h = SampleHeader();
  std::vector<std::byte> b = Encode(h);
  EXPECT_EQ(LeAt(b, kKeyConsumedOffset, 8), 640u);
  EXPECT_EQ(std::memcmp(b.data() + kKeyDigestOffset, h.key.digest.data(), 16), 0);
  EXPECT_EQ(LeAt(b, kParentConsumedOffset, 8), 512u);
  EXPECT_EQ(std::memcmp(b.data() + kParentDigestOffset, h.parent->digest.data(), 16), 0);
  EXPECT_EQ(std::memcmp(b.data() + kBucketDigestOffset, h.bucket.data(), 16), 0);
  h.parent.reset();
  b = Encode(h);
  EXPECT_EQ(LeAt(b, kParentConsumedOffset, 8), 0u);
  EXPECT_EQ(LeAt(b, kParentDigestOffset, 8), 0u);
}

TEST(RecordHeaderTest, SizesAndOffsetsMatchTheLayout) {
  RecordHeader h = SampleHeader();
  std::vector<std::byte> b = Encode(h);
  // Per rank: planes 512, 16384, 4097 pad to 4096 + 16384 + 8192; row pads to 16 KiB.
  const uint64_t share = 4096 + 16384 + 8192;
  EXPECT_EQ(LeAt(b, kPageTokensOffset, 4), 64u);
  EXPECT_EQ(LeAt(b, kTailPageCountOffset, 4), 2u);
  EXPECT_EQ(LeAt(b, kChecksumSegmentOffsetOffset, 8), 4096u);
  EXPECT_EQ(LeAt(b, kPageSegmentOffsetOffset, 8), 8192u);
  EXPECT_EQ(LeAt(b, kPageRecordBytesOffset, 8), 2 * share);
  EXPECT_EQ(LeAt(b, kRowSegmentOffsetOffset, 8), 8192 + 2 * 2 * share);
  EXPECT_EQ(LeAt(b, kRowSegmentBytesOffset, 8), 2u * 16384);
  EXPECT_EQ(LeAt(b, kRowChecksumOffset, 8), 0x1122334455667788ULL);
  EXPECT_EQ(LeAt(b, kCreatedOffset, 8), 0x0102030405060708ULL);
}

TEST(RecordHeaderTest, RankTableListsPlaneAndRowSizes) {
  std::vector<std::byte> b = Encode(SampleHeader());
  for (size_t rank = 0, at = kRankTableOffset; rank < 2; ++rank) {
    EXPECT_EQ(LeAt(b, at, 4), 3u);
    EXPECT_EQ(LeAt(b, at + 4, 4), 0u);
    EXPECT_EQ(LeAt(b, at + 8, 8), 3u * 4096 + 5);
    EXPECT_EQ(LeAt(b, at + 16, 8), 512u);
    EXPECT_EQ(LeAt(b, at + 24, 8), 16384u);
    EXPECT_EQ(LeAt(b, at + 32, 8), 4097u);
    at += 40;
  }
}

TEST(RecordHeaderTest, HeaderChecksumCoversTheFirst4088Bytes) {
  std::vector<std::byte> b = Encode(SampleHeader());
  EXPECT_EQ(LeAt(b, kHeaderChecksumOffset, 8), Xxh3(std::span(b).first(4088)));
}

TEST(RecordHeaderTest, ChecksumSegmentIsPaddedTo4KiB) {
  RecordHeader h = SampleHeader();
  for (uint32_t tail : {0u, 1u, 512u, 513u}) {
    h.tail_page_count = tail;
    RecordExtents e = *ComputeExtents(h);
    EXPECT_EQ(e.checksum_segment_bytes, AlignUp(8 * uint64_t{tail})) << tail;
    EXPECT_EQ(e.page_segment_offset % 4096, 0u);
    EXPECT_EQ(e.row_segment_offset, e.page_segment_offset + tail * e.page_record_bytes);
  }
}

TEST(RecordHeaderTest, EveryPlaneOfEveryPageIsAlignedInTheFileForEveryGeometry) {
  std::vector<CacheGeometry> geometries;
  for (const GeometryPreset& p : GeometryPresets()) {
    for (uint32_t ranks : {1u, 2u, 4u}) geometries.push_back(*PresetGeometry(p.name, ranks, 16, 4));
  }
  geometries.push_back(MakeGeometry(16, {100, 7, 4096, 5000}, 33, 3));
  for (const CacheGeometry& g : geometries) {
    for (bool replicated : {false, true}) {
      RecordHeader h = SampleHeader();
      h.shape = ShapeOf(g);
      h.tail_page_count = 5;
      h.pages_replicated = replicated;
      h.row_replicated = replicated;
      RecordExtents e = *ComputeExtents(h);
      RecordLayout layout(g);
      const uint32_t ranks = replicated ? 1 : g.rank_count();
      for (uint32_t page = 0; page < 5; ++page) {
        for (uint32_t r = 0; r < ranks; ++r) {
          for (uint32_t p = 0; p < layout.plane_count(r); ++p) {
            EXPECT_EQ((e.page_offset(page) + layout.plane_offset(r, p)) % 4096, 0u);
          }
        }
      }
      for (uint32_t r = 0; r < ranks; ++r) {
        EXPECT_EQ((e.row_segment_offset + layout.row_offset(r)) % 4096, 0u);
      }
    }
  }
}

TEST(RecordHeaderTest, RejectsBadMagic) {
  std::vector<std::byte> b = Encode(SampleHeader());
  b[0] = std::byte{'X'};
  EXPECT_NE(DecodeError(b).find("bad magic"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsUnknownVersion) {
  std::vector<std::byte> b = Encode(SampleHeader());
  PutLe(b, kVersionOffset, 2, 4);
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("unsupported format version 2"), std::string::npos);
}

// Found by the record_header fuzz target: the scan accepted a key with
// consumed == 0, which the join's scan summary refuses, so one such file kept
// its rank from joining (tests/fuzz/corpus/record_header/key-consumed-zero).
TEST(RecordHeaderTest, RejectsAKeyThatConsumedNoToken) {
  RecordHeader h = SampleHeader();
  h.parent.reset();
  std::vector<std::byte> b = Encode(h);
  PutLe(b, kKeyConsumedOffset, 0, 8);
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("key consumed count is 0"), std::string::npos);
  h.key.consumed = 0;
  std::vector<std::byte> out(kRecordHeaderBytes);
  const Status s = EncodeRecordHeader(h, out);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("key consumed count is 0"), std::string::npos);
}

// Found by the record_header_encode fuzz target: the writer encoded any
// format_version, which the reader then refused.
TEST(RecordHeaderTest, RefusesToEncodeAVersionItCannotRead) {
  RecordHeader h = SampleHeader();
  h.format_version = kRecordFormatVersion + 1;
  std::vector<std::byte> out(kRecordHeaderBytes);
  const Status s = EncodeRecordHeader(h, out);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("unsupported format version 2"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsAHeaderChecksumMismatch) {
  std::vector<std::byte> b = Encode(SampleHeader());
  b[kTailPageCountOffset] ^= std::byte{1};
  EXPECT_NE(DecodeError(b).find("header checksum"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsUnknownFlagBits) {
  std::vector<std::byte> b = Encode(SampleHeader());
  PutLe(b, kFlagsOffset, kFlagHasParent | (1u << 5), 4);
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("unknown flag bits"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsNonzeroReservedBytes) {
  std::vector<std::byte> b = Encode(SampleHeader());
  b[kCreatedOffset + 8] = std::byte{1};
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("reserved"), std::string::npos);
  b = Encode(SampleHeader());
  b[kHeaderChecksumOffset - 1] = std::byte{1};
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("after the rank table"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsAParentWithoutTheFlag) {
  std::vector<std::byte> b = Encode(SampleHeader());
  PutLe(b, kFlagsOffset, 0, 4);
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("has-parent"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsAParentNotBelowTheKey) {
  RecordHeader h = SampleHeader();
  h.parent = KeyOf(640, 3);
  std::vector<std::byte> b(kRecordHeaderBytes);
  Status s = EncodeRecordHeader(h, b);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("parent consumed count"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsZeroRanks) {
  std::vector<std::byte> b = Encode(SampleHeader());
  PutLe(b, kRankCountOffset, 0, 4);
  for (size_t i = kRankTableOffset; i < kHeaderChecksumOffset; ++i) b[i] = std::byte{0};
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("rank_count is 0"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsARankTableOverrunningTheHeader) {
  std::vector<std::byte> b = Encode(SampleHeader());
  PutLe(b, kRankCountOffset, 1000, 4);  // rank 2 onwards reads the zero padding
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("rank 2: page_plane_count is 0"), std::string::npos);
  b = Encode(SampleHeader());
  PutLe(b, kRankTableOffset, 100000, 4);  // rank 0 plane count
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("overrun"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsAZeroPlaneSize) {
  std::vector<std::byte> b = Encode(SampleHeader());
  PutLe(b, kRankTableOffset + 16, 0, 8);
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("unit bytes 0"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsStoredOffsetsThatDisagreeWithTheSizes) {
  std::vector<std::byte> b = Encode(SampleHeader());
  PutLe(b, kRowSegmentOffsetOffset, LeAt(b, kRowSegmentOffsetOffset, 8) + 4096, 8);
  Reseal(b);
  EXPECT_NE(DecodeError(b).find("row_segment_offset"), std::string::npos);
}

TEST(RecordHeaderTest, RejectsReplicationAcrossDifferentRanks) {
  RecordHeader h = SampleHeader();
  h.shape.ranks[1].plane_bytes[0] = 1024;
  h.pages_replicated = true;
  EXPECT_EQ(ComputeExtents(h).status().code(), StatusCode::kCorruption);
}

TEST(RecordHeaderTest, RejectsTooManyTailPages) {
  RecordHeader h = SampleHeader();
  h.tail_page_count = kMaxTailPages + 1;
  EXPECT_NE(ComputeExtents(h).status().message().find("tail_page_count"), std::string::npos);
}

TEST(RecordHeaderTest, RefusesAGeometryTooLargeForTheHeader) {
  RecordHeader h = SampleHeader();
  h.shape = ShapeOf(MakeGeometry(64, std::vector<uint64_t>(100, 4096), 4096, 8));
  std::vector<std::byte> b(kRecordHeaderBytes);
  Status s = EncodeRecordHeader(h, b);
  EXPECT_NE(s.message().find("rank table"), std::string::npos) << s.ToString();
}

TEST(RecordHeaderTest, FirstDifferenceNamesTheField) {
  RecordHeader a = SampleHeader();
  RecordHeader b = a;
  EXPECT_FALSE(FirstHeaderDifference(a, b).has_value());
  b.created_unix_ns += 1;
  EXPECT_FALSE(FirstHeaderDifference(a, b).has_value());
  b.tail_page_count += 1;
  EXPECT_EQ(FirstHeaderDifference(a, b), "tail_page_count");
  b = a;
  b.shape.ranks[0].row_bytes += 1;
  EXPECT_EQ(FirstHeaderDifference(a, b), "plane or row sizes");
  b = a;
  b.fingerprint[0] ^= 1;
  EXPECT_EQ(FirstHeaderDifference(a, b), "layout fingerprint");
}

TEST(HeaderAgreementDigestTest, IgnoresFingerprintRowChecksumAndCreationTime) {
  const RecordHeader a = SampleHeader();
  RecordHeader b = a;
  b.fingerprint[0] ^= 1;
  b.row_checksum = 7;
  b.created_unix_ns = 9;
  EXPECT_EQ(*HeaderAgreementDigest(a), *HeaderAgreementDigest(b));
}

TEST(HeaderAgreementDigestTest, CoversEveryOtherField) {
  const Digest128 base = *HeaderAgreementDigest(SampleHeader());
  std::vector<std::pair<std::string, RecordHeader>> variants;
  auto vary = [&](const std::string& what, auto change) {
    RecordHeader h = SampleHeader();
    change(h);
    variants.emplace_back(what, h);
  };
  vary("key", [](RecordHeader& h) { h.key.digest[3] ^= 1; });
  vary("parent", [](RecordHeader& h) { h.parent->digest[0] ^= 1; });
  vary("no parent", [](RecordHeader& h) {
    h.parent.reset();
    h.tail_page_count = 10;
  });
  vary("bucket", [](RecordHeader& h) { h.bucket[15] ^= 1; });
  vary("tail pages", [](RecordHeader& h) {
    h.key.consumed += 64;
    h.tail_page_count = 3;
  });
  vary("identity", [](RecordHeader& h) { h.identity[31] ^= 1; });
  vary("row size", [](RecordHeader& h) { h.shape.ranks[1].row_bytes += 1; });
  vary("page replication", [](RecordHeader& h) { h.pages_replicated = true; });
  for (const auto& [what, header] : variants) {
    Result<Digest128> d = HeaderAgreementDigest(header);
    ASSERT_TRUE(d.ok()) << what << ": " << d.status().ToString();
    EXPECT_NE(*d, base) << what;
  }
}

}  // namespace
}  // namespace strata
