#include "store/record/record_scan.h"

#include <gtest/gtest.h>

#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;
using testing::MakeGeometry;

const CacheGeometry& Geometry() {
  static const CacheGeometry g = MakeGeometry(64, {4096, 100}, 5000);
  return g;
}

RecordExpectation Expect() {
  return ExpectationFor(testing::TestIdentity(), ComputeLayoutFingerprint(Geometry()), Geometry());
}

RecordHeader Header(uint64_t consumed, std::optional<uint64_t> parent, uint32_t tail = 2) {
  RecordHeader h;
  h.identity = testing::TestIdentity();
  h.fingerprint = ComputeLayoutFingerprint(Geometry());
  h.key = KeyOf(consumed);
  if (parent) h.parent = KeyOf(*parent);
  h.bucket = h.key.digest;
  h.tail_page_count = tail;
  h.shape = ShapeOf(Geometry());
  return h;
}

FileInfo FileOf(const RecordHeader& h, bool with_row = true) {
  RecordExtents e = *ComputeExtents(h);
  FileInfo info;
  info.bytes = with_row ? e.file_bytes_with_row() : e.file_bytes_without_row();
  info.mtime_unix_ns = 123456789;
  info.is_regular = true;
  return info;
}

std::variant<ScannedRecord, RejectedFile> Classify(const RecordHeader& h, const FileInfo& info,
                                                   const RecordExpectation& e = Expect()) {
  return ClassifyRecordFile(RecordFileName(h.key), h.key, info, Result<RecordHeader>(h), e);
}

RejectReason ReasonOf(const std::variant<ScannedRecord, RejectedFile>& v) {
  EXPECT_TRUE(std::holds_alternative<RejectedFile>(v));
  return std::holds_alternative<RejectedFile>(v) ? std::get<RejectedFile>(v).reason
                                                 : RejectReason::kTemporary;
}

TEST(RecordScanTest, AcceptsAGoodRecordWithEverythingTheIndexNeeds) {
  RecordHeader h = Header(192, 64);
  auto v = Classify(h, FileOf(h));
  ASSERT_TRUE(std::holds_alternative<ScannedRecord>(v));
  const ScannedRecord& r = std::get<ScannedRecord>(v);
  EXPECT_EQ(r.key, h.key);
  EXPECT_EQ(r.parent, h.parent);
  EXPECT_EQ(r.bucket, h.bucket);
  EXPECT_EQ(r.tail_page_count, 2u);
  EXPECT_TRUE(r.row_present);
  EXPECT_EQ(r.mtime_unix_ns, 123456789);
  EXPECT_EQ(r.header, h);
}

TEST(RecordScanTest, DerivesRowPresenceFromTheSize) {
  RecordHeader h = Header(192, 64);
  auto v = Classify(h, FileOf(h, /*with_row=*/false));
  ASSERT_TRUE(std::holds_alternative<ScannedRecord>(v));
  EXPECT_FALSE(std::get<ScannedRecord>(v).row_present);
  EXPECT_EQ(std::get<ScannedRecord>(v).row_state, RowState::kAbsent);
  FileInfo partial = FileOf(h, false);
  partial.bytes += 4096;
  v = Classify(h, partial);
  ASSERT_TRUE(std::holds_alternative<ScannedRecord>(v));
  EXPECT_FALSE(std::get<ScannedRecord>(v).row_present);
  EXPECT_EQ(std::get<ScannedRecord>(v).row_state, RowState::kPartial);
}

TEST(RecordScanTest, RejectsEachMismatchWithItsReason) {
  RecordHeader h = Header(192, 64);
  RecordHeader other = h;
  other.identity[0] ^= 1;
  EXPECT_EQ(ReasonOf(Classify(other, FileOf(other))), RejectReason::kWrongIdentity);
  other = h;
  other.identity[31] ^= 1;  // outside the directory-name prefix: only the full identity catches it
  EXPECT_EQ(ReasonOf(Classify(other, FileOf(other))), RejectReason::kWrongIdentity);
  other = h;
  other.fingerprint[3] ^= 1;
  EXPECT_EQ(ReasonOf(Classify(other, FileOf(other))), RejectReason::kWrongFingerprint);
  other = h;
  other.shape.ranks[0].row_bytes = 6000;
  EXPECT_EQ(ReasonOf(Classify(other, FileOf(other))), RejectReason::kWrongShape);
  auto mismatch = ClassifyRecordFile(RecordFileName(KeyOf(256)), KeyOf(256), FileOf(h),
                                     Result<RecordHeader>(h), Expect());
  EXPECT_EQ(ReasonOf(mismatch), RejectReason::kNameMismatch);
  FileInfo shortened = FileOf(h, false);
  shortened.bytes -= 4096;
  EXPECT_EQ(ReasonOf(Classify(h, shortened)), RejectReason::kBadSize);
  FileInfo dir = FileOf(h);
  dir.is_regular = false;
  EXPECT_EQ(ReasonOf(Classify(h, dir)), RejectReason::kNotAFile);
  auto bad = ClassifyRecordFile(RecordFileName(h.key), h.key, FileOf(h),
                                Result<RecordHeader>(Status::Corruption("bad magic")), Expect());
  EXPECT_EQ(ReasonOf(bad), RejectReason::kBadHeader);
  auto unreadable = ClassifyRecordFile(RecordFileName(h.key), h.key, FileOf(h),
                                       Result<RecordHeader>(Status::IoError("EIO")), Expect());
  EXPECT_EQ(ReasonOf(unreadable), RejectReason::kUnreadable);
}

TEST(RecordScanTest, ADirectoryNameExpectationChecksPrefixAndFingerprintOnly) {
  RecordHeader h = Header(192, 64);
  Result<RecordExpectation> e = ExpectationFromDirName(
      NamespaceDirName(testing::TestIdentity(), ComputeLayoutFingerprint(Geometry())));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_FALSE(e->identity.has_value());
  EXPECT_FALSE(e->shape.has_value());
  EXPECT_TRUE(std::holds_alternative<ScannedRecord>(Classify(h, FileOf(h), *e)));
  RecordHeader other = h;
  other.identity[0] ^= 1;
  EXPECT_EQ(ReasonOf(Classify(other, FileOf(other), *e)), RejectReason::kWrongIdentity);
  EXPECT_FALSE(ExpectationFromDirName("not-a-namespace").ok());
}

ScannedRecord Scanned(uint64_t consumed, std::optional<uint64_t> parent) {
  RecordHeader h = Header(consumed, parent);
  return std::get<ScannedRecord>(Classify(h, FileOf(h)));
}

TEST(RecordScanTest, RemovesOrphansTogetherWithTheirDescendants) {
  // 64 <- 128 <- 192 <- 256 and 128 <- 320; 448 hangs off a missing 384;
  // 512 hangs off 448. Given in scrambled order.
  std::vector<ScannedRecord> records = {Scanned(256, 192), Scanned(512, 448), Scanned(64, {}),
                                        Scanned(320, 128), Scanned(448, 384), Scanned(128, 64),
                                        Scanned(192, 128)};
  std::vector<RejectedFile> rejected;
  RemoveOrphans(records, rejected);
  std::vector<uint64_t> kept;
  for (const ScannedRecord& r : records) kept.push_back(r.key.consumed);
  EXPECT_EQ(kept, (std::vector<uint64_t>{64, 128, 192, 256, 320}));
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_EQ(rejected[0].name, RecordFileName(KeyOf(448)));
  EXPECT_EQ(rejected[0].reason, RejectReason::kOrphan);
  EXPECT_NE(rejected[0].detail.find("is missing"), std::string::npos);
  EXPECT_EQ(rejected[1].name, RecordFileName(KeyOf(512)));
  EXPECT_NE(rejected[1].detail.find("is itself removed"), std::string::npos);
}

TEST(RecordScanTest, CountsRejectionsByReason) {
  ScanReport report;
  report.rejected = {{"a", RejectReason::kTemporary, ""},
                     {"b", RejectReason::kTemporary, ""},
                     {"c", RejectReason::kOrphan, ""}};
  auto counts = report.CountsByReason();
  EXPECT_EQ(counts[static_cast<size_t>(RejectReason::kTemporary)], 2u);
  EXPECT_EQ(counts[static_cast<size_t>(RejectReason::kOrphan)], 1u);
  EXPECT_EQ(counts[static_cast<size_t>(RejectReason::kBadHeader)], 0u);
  EXPECT_EQ(RejectReasonName(RejectReason::kWrongFingerprint), "wrong-fingerprint");
}

}  // namespace
}  // namespace strata
