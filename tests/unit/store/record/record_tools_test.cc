#include "launch/record_tools.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "store/record/record_dir.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::DiskFixture;
using testing::KeyOf;
using testing::MakeGeometry;
using testing::MakeRecord;

const CacheGeometry& Geometry() {
  static const CacheGeometry g = MakeGeometry(64, {4096, 300}, 10000, 2);
  return g;
}

// Writes records 64 <- 128 <- 192 and a root at 640, then releases the
// directory so that the tools can lock it.
class RecordToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    f_ = std::make_unique<DiskFixture>(Geometry());
    STRATA_DISK_FIXTURE_OR_SKIP(*f_);
    Put(64, {}, 1);
    Put(128, 64, 2);
    Put(192, 128, 1);
    Put(640, {}, 10);
    f_->thread.reset();
    f_->dir.reset();
  }

  void Put(uint64_t consumed, std::optional<uint64_t> parent, uint32_t tail) {
    testing::TestRecord r = MakeRecord(Geometry(), KeyOf(consumed),
                                       parent ? std::optional(KeyOf(*parent)) : std::nullopt, tail);
    DiskCompletion c = testing::WriteRecord(*f_->thread, r);
    ASSERT_TRUE(c.status.ok()) << c.status.ToString();
    headers_[consumed] = *c.header;
  }

  std::string Path(uint64_t consumed) const {
    return f_->dir_path + "/" + RecordFileName(KeyOf(consumed));
  }

  void FlipByte(uint64_t consumed, uint64_t offset) {
    std::fstream file(Path(consumed), std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    file.read(&c, 1);
    c = static_cast<char>(c ^ 0x01);
    file.seekp(static_cast<std::streamoff>(offset));
    file.write(&c, 1);
  }

  Result<FsckReport> Fsck(bool repair, std::string path = "") {
    FsckOptions o;
    o.repair = repair;
    o.progress = [this](const FsckProgress& p) { last_progress_ = p; };
    return RunFsck(fs_, path.empty() ? f_->dir_path : path, o);
  }

  const FsckProblem* Find(const FsckReport& r, uint64_t consumed) {
    for (const FsckProblem& p : r.problems) {
      if (p.name == RecordFileName(KeyOf(consumed))) return &p;
    }
    return nullptr;
  }

  PosixFileSystem fs_;
  std::unique_ptr<DiskFixture> f_;
  std::map<uint64_t, RecordHeader> headers_;
  FsckProgress last_progress_;
};

TEST_F(RecordToolsTest, FsckOfACleanDirectoryIsClean) {
  Result<FsckReport> r = Fsck(false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->clean());
  EXPECT_EQ(r->directories, 1u);
  EXPECT_EQ(r->records_ok, 4u);
  uint64_t bytes = 0;
  for (uint64_t c : {64, 128, 192, 640}) bytes += std::filesystem::file_size(Path(c));
  EXPECT_EQ(r->bytes_verified, bytes);
  EXPECT_EQ(last_progress_.records_done, 4u);
  EXPECT_EQ(last_progress_.records_total, 4u);
}

TEST_F(RecordToolsTest, FsckReportsABadPageAndOrphansItsDescendants) {
  RecordExtents e = *ComputeExtents(headers_[128]);
  FlipByte(128, e.page_offset(1) + 123);
  Result<FsckReport> r = Fsck(false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->clean());
  const FsckProblem* bad = Find(*r, 128);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->reason, RejectReason::kBadChecksum);
  EXPECT_NE(bad->detail.find("page 1 of 2"), std::string::npos) << bad->detail;
  EXPECT_FALSE(bad->removed);
  const FsckProblem* orphan = Find(*r, 192);
  ASSERT_NE(orphan, nullptr);
  EXPECT_EQ(orphan->reason, RejectReason::kOrphan);
  EXPECT_EQ(r->records_ok, 2u);                     // 64 and 640
  EXPECT_TRUE(std::filesystem::exists(Path(128)));  // not without --repair
}

TEST_F(RecordToolsTest, FsckReportsABadRow) {
  RecordExtents e = *ComputeExtents(headers_[640]);
  FlipByte(640, e.row_segment_offset + 9999);
  Result<FsckReport> r = Fsck(false);
  ASSERT_TRUE(r.ok());
  const FsckProblem* bad = Find(*r, 640);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->reason, RejectReason::kBadChecksum);
  EXPECT_NE(bad->detail.find("row segment"), std::string::npos);
}

TEST_F(RecordToolsTest, RepairRemovesBadTemporaryAndOrphanedFiles) {
  FlipByte(64, 0);  // bad magic: 128 and 192 become orphans
  { std::ofstream(f_->dir_path + "/" + TemporaryFileName(KeyOf(700))) << "partial"; }
  Result<FsckReport> r = Fsck(true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->problems.size(), 4u);  // 64 bad-header, 128 and 192 orphans, the .tmp
  EXPECT_EQ(r->removed, 4u);
  for (const FsckProblem& p : r->problems) EXPECT_TRUE(p.removed) << p.name;
  EXPECT_EQ(Find(*r, 64)->reason, RejectReason::kBadHeader);
  EXPECT_EQ(Find(*r, 192)->reason, RejectReason::kOrphan);
  EXPECT_TRUE(std::filesystem::exists(Path(640)));
  Result<FsckReport> again = Fsck(false);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->clean());
  EXPECT_EQ(again->records_ok, 1u);
}

TEST_F(RecordToolsTest, RepairTruncatesATornRow) {
  RecordExtents e = *ComputeExtents(headers_[640]);
  std::filesystem::resize_file(Path(640), e.row_segment_offset + 4096);
  Result<FsckReport> r = Fsck(true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->clean());  // a record without its row is still a record
  EXPECT_EQ(r->torn_rows, 1u);
  EXPECT_EQ(r->truncated, 1u);
  EXPECT_EQ(std::filesystem::file_size(Path(640)), e.row_segment_offset);
}

TEST_F(RecordToolsTest, FsckRefusesADirectoryAStoreHolds) {
  Result<std::unique_ptr<RecordDir>> held =
      RecordDir::Open(fs_, f_->dir_path, RecordDir::Create::kNo);
  ASSERT_TRUE(held.ok());
  Result<FsckReport> r = Fsck(false);
  EXPECT_EQ(r.status().code(), StatusCode::kBusy);
  EXPECT_NE(r.status().message().find("in use by pid"), std::string::npos);
  // inspect reads without the lock
  Result<std::vector<InspectedDir>> listed = RunInspect(fs_, f_->dir_path);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->at(0).scan.records.size(), 4u);
}

TEST_F(RecordToolsTest, BaseDirectoryCoversEveryNamespace) {
  CacheGeometry other = MakeGeometry(64, {8192}, 4096);
  const std::string second =
      RecordDirPath(f_->scratch.path(), testing::TestIdentity(), ComputeLayoutFingerprint(other));
  ASSERT_TRUE(std::filesystem::create_directory(second));
  { std::ofstream(f_->scratch.path() + "/unrelated.txt") << "x"; }
  Result<std::vector<std::string>> dirs = FindNamespaceDirs(fs_, f_->scratch.path());
  ASSERT_TRUE(dirs.ok());
  EXPECT_EQ(dirs->size(), 2u);
  Result<FsckReport> r = Fsck(false, f_->scratch.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->directories, 2u);
  EXPECT_EQ(r->records_ok, 4u);
  EXPECT_EQ(FindNamespaceDirs(fs_, second + "/..").status().code(), StatusCode::kOk);
  std::filesystem::create_directory(f_->scratch.path() + "/empty");
  EXPECT_EQ(FindNamespaceDirs(fs_, f_->scratch.path() + "/empty").status().code(),
            StatusCode::kNotFound);
}

TEST_F(RecordToolsTest, InspectListsRecordsAndRejections) {
  std::filesystem::resize_file(Path(640), 5000);
  Result<std::vector<InspectedDir>> listed = RunInspect(fs_, f_->dir_path);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  const ScanReport& scan = listed->at(0).scan;
  ASSERT_EQ(scan.records.size(), 3u);
  EXPECT_EQ(scan.records[0].key, KeyOf(64));
  EXPECT_EQ(scan.records[1].parent, KeyOf(64));
  EXPECT_EQ(scan.records[1].tail_page_count, 2u);
  EXPECT_TRUE(scan.records[2].row_present);
  ASSERT_EQ(scan.rejected.size(), 1u);
  EXPECT_EQ(scan.rejected[0].reason, RejectReason::kBadSize);
  EXPECT_TRUE(std::filesystem::exists(Path(640)));  // inspect changes nothing
}

}  // namespace
}  // namespace strata
