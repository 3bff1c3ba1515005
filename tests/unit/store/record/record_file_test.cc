#include "store/record/record_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;

TEST(RecordFileTest, NamesAreTheKeyStemWithCkptAndTmpSuffixes) {
  PrefixKey k = KeyOf(100);
  EXPECT_EQ(RecordFileName(k), k.ToFileStem() + ".ckpt");
  EXPECT_EQ(TemporaryFileName(k), k.ToFileStem() + ".ckpt.tmp");
  EXPECT_EQ(RecordFileName(k).size(), 16 + 1 + 32 + 5);
}

TEST(RecordFileTest, ParsesEachKindOfName) {
  PrefixKey k = KeyOf(100);
  ParsedName rec = ParseRecordName(RecordFileName(k));
  EXPECT_EQ(rec.kind, NameKind::kRecord);
  EXPECT_EQ(rec.key, k);
  EXPECT_EQ(ParseRecordName(TemporaryFileName(k)).kind, NameKind::kTemporary);
  EXPECT_EQ(ParseRecordName(".strata-direct-io-probe.tmp").kind, NameKind::kTemporary);
  ParsedName bad = ParseRecordName("0000-zz.ckpt");
  EXPECT_EQ(bad.kind, NameKind::kBadRecord);
  EXPECT_FALSE(bad.error.empty());
  EXPECT_EQ(ParseRecordName("README").kind, NameKind::kOther);
  EXPECT_EQ(ParseRecordName("x.ckpt.bak").kind, NameKind::kOther);
}

RecordExtents SampleExtents() {
  RecordExtents e;
  e.checksum_segment_offset = 4096;
  e.checksum_segment_bytes = 4096;
  e.page_segment_offset = 8192;
  e.page_record_bytes = 16384;
  e.row_segment_offset = 8192 + 3 * 16384;
  e.row_segment_bytes = 8192;
  return e;
}

TEST(RecordFileTest, RowIsPresentIffTheFileCoversTheRowSegment) {
  RecordExtents e = SampleExtents();
  EXPECT_EQ(*RowStateFromSize(e, e.file_bytes_with_row()), RowState::kPresent);
  EXPECT_EQ(*RowStateFromSize(e, e.row_segment_offset), RowState::kAbsent);
  EXPECT_EQ(*RowStateFromSize(e, e.row_segment_offset + 4096), RowState::kPartial);
}

TEST(RecordFileTest, SizeInsideTheChecksumSegmentIsCorrupt) {
  Result<RowState> s = RowStateFromSize(SampleExtents(), 4096 + 8);
  EXPECT_EQ(s.status().code(), StatusCode::kCorruption);
  EXPECT_NE(s.status().message().find("checksum segment"), std::string::npos);
}

TEST(RecordFileTest, SizeInsideThePageSegmentNamesThePage) {
  Result<RowState> s = RowStateFromSize(SampleExtents(), 8192 + 16384 + 100);
  EXPECT_EQ(s.status().code(), StatusCode::kCorruption);
  EXPECT_NE(s.status().message().find("in page 1 of 3"), std::string::npos) << s.status().message();
}

TEST(RecordFileTest, SizeBeyondTheRecordIsCorrupt) {
  RecordExtents e = SampleExtents();
  Result<RowState> s = RowStateFromSize(e, e.file_bytes_with_row() + 1);
  EXPECT_NE(s.status().message().find("1 bytes longer"), std::string::npos);
}

TEST(RecordFileTest, AbortedWriteLeavesNothingAndCommitRenames) {
  testing::ScratchDir scratch;
  PosixFileSystem fs;
  Result<int> dir = fs.OpenDirectory(scratch.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(dir.ok());
  STRATA_SKIP_WITHOUT_DIRECT_IO(fs, *dir, scratch.path());
  PrefixKey k = KeyOf(64);
  Result<int> fd = BeginRecordWrite(fs, *dir, k, 1 << 20);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  Result<FileInfo> info = fs.Stat(*fd);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->bytes, 1u << 20);  // preallocated to its final length
  fs.Close(*fd);
  EXPECT_TRUE(std::filesystem::exists(scratch.path() + "/" + TemporaryFileName(k)));
  EXPECT_TRUE(AbortRecordWrite(fs, *dir, k).ok());
  EXPECT_TRUE(AbortRecordWrite(fs, *dir, k).ok());  // already gone is fine
  EXPECT_TRUE(fs.List(*dir)->empty());

  fd = BeginRecordWrite(fs, *dir, k, 8192);
  ASSERT_TRUE(fd.ok());
  fs.Close(*fd);
  ASSERT_TRUE(CommitRecordWrite(fs, *dir, k).ok());
  EXPECT_EQ(*fs.List(*dir), std::vector<std::string>{RecordFileName(k)});
  EXPECT_TRUE(UnlinkRecord(fs, *dir, k, Durability::kSync).ok());
  EXPECT_TRUE(UnlinkRecord(fs, *dir, k, Durability::kNone).ok());
  EXPECT_TRUE(fs.List(*dir)->empty());
  fs.Close(*dir);
}

TEST(RecordFileTest, ReadHeaderRejectsAShortFile) {
  testing::ScratchDir scratch;
  PosixFileSystem fs;
  Result<int> dir = fs.OpenDirectory(scratch.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(dir.ok());
  Result<int> fd = fs.OpenAt(*dir, "short.ckpt", OpenFor::kWriteNew);
  ASSERT_TRUE(fd.ok());
  std::vector<std::byte> some(100, std::byte{1});
  ASSERT_TRUE(fs.WriteAt(*fd, some, 0).ok());
  fs.Close(*fd);
  fd = fs.OpenAt(*dir, "short.ckpt", OpenFor::kRead);
  ASSERT_TRUE(fd.ok());
  Result<RecordHeader> h = ReadRecordHeader(fs, *fd);
  EXPECT_EQ(h.status().code(), StatusCode::kCorruption);
  EXPECT_NE(h.status().message().find("shorter than its 4096-byte header"), std::string::npos);
  fs.Close(*fd);
  fs.Close(*dir);
}

}  // namespace
}  // namespace strata
