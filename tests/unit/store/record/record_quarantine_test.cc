// Unreadable is not corrupt: a record file the scan could not read (EIO,
// EACCES, EMFILE, ENOMEM) is moved into "<dir>/quarantine/" with the records
// below it, never deleted; only files proven bad are removed, and the next
// scan ignores the quarantine folder.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "store/record/record_dir.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::DiskFixture;
using testing::KeyOf;
using testing::MakeGeometry;
using testing::MakeRecord;

const CacheGeometry& Geometry() {
  static const CacheGeometry g = MakeGeometry(64, {4096, 100}, 9000);
  return g;
}

// Fails every open of one file name with `error`.
class UnreadableFileSystem final : public testing::ForwardingFileSystem {
 public:
  UnreadableFileSystem(std::string name, int error) : name_(std::move(name)), error_(error) {}
  Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) override {
    if (name == name_) return Status::FromErrno(error_, "open '" + name_ + "' (test)");
    return ForwardingFileSystem::OpenAt(dir_fd, name, how);
  }

 private:
  std::string name_;
  int error_;
};

class RecordQuarantineTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    f_ = std::make_unique<DiskFixture>(Geometry());
    STRATA_DISK_FIXTURE_OR_SKIP(*f_);
    expect_ =
        ExpectationFor(testing::TestIdentity(), ComputeLayoutFingerprint(Geometry()), Geometry());
  }

  void Put(uint64_t consumed, std::optional<uint64_t> parent) {
    testing::TestRecord r = MakeRecord(Geometry(), KeyOf(consumed),
                                       parent ? std::optional(KeyOf(*parent)) : std::nullopt, 1);
    ASSERT_TRUE(testing::WriteRecord(*f_->thread, r).status.ok());
  }

  std::string Path(uint64_t consumed) const {
    return f_->dir_path + "/" + RecordFileName(KeyOf(consumed));
  }
  std::string QuarantinePath(uint64_t consumed) const {
    return f_->dir_path + "/quarantine/" + RecordFileName(KeyOf(consumed));
  }

  std::unique_ptr<DiskFixture> f_;
  RecordExpectation expect_;
};

TEST_P(RecordQuarantineTest, UnreadableRecordAndItsSubtreeAreQuarantinedNotDeleted) {
  Put(64, {});
  Put(128, 64);   // unreadable
  Put(192, 128);  // below it
  Put(640, {});   // proven bad: truncated inside its pages
  std::filesystem::resize_file(Path(640), 4096 + 4096 + 10);
  UnreadableFileSystem failing(RecordFileName(KeyOf(128)), GetParam());
  Result<ScanReport> scan = ScanRecordDirectory(failing, f_->dir->fd(), expect_);
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  ASSERT_EQ(scan->records.size(), 1u);  // 64
  const auto counts = scan->CountsByReason();
  EXPECT_EQ(counts[static_cast<size_t>(RejectReason::kUnreadable)], 1u);
  EXPECT_EQ(counts[static_cast<size_t>(RejectReason::kOrphanOfUnreadable)], 1u);
  EXPECT_EQ(counts[static_cast<size_t>(RejectReason::kBadSize)], 1u);

  RecordDir::Cleanup c = f_->dir->RemoveRejected(*scan);
  EXPECT_TRUE(c.first_error.ok()) << c.first_error.ToString();
  EXPECT_EQ(c.removed, 1u);
  ASSERT_EQ(c.quarantined.size(), 2u);
  EXPECT_NE(c.quarantined[0].find(std::strerror(GetParam())), std::string::npos)
      << c.quarantined[0];
  EXPECT_FALSE(std::filesystem::exists(Path(640)));  // proven corrupt: removed
  EXPECT_FALSE(std::filesystem::exists(Path(128)));
  EXPECT_TRUE(std::filesystem::exists(QuarantinePath(128)));  // kept, byte for byte
  EXPECT_TRUE(std::filesystem::exists(QuarantinePath(192)));
  EXPECT_TRUE(std::filesystem::exists(Path(64)));

  // The next scan, with nothing failing, ignores the quarantine folder.
  Result<ScanReport> again = f_->dir->Scan(expect_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->records.size(), 1u);
  EXPECT_TRUE(again->rejected.empty());
  EXPECT_EQ(again->ignored, std::vector<std::string>{"quarantine"});
  EXPECT_EQ(f_->dir->RemoveRejected(*again).removed, 0u);
  EXPECT_TRUE(std::filesystem::exists(QuarantinePath(128)));
}

INSTANTIATE_TEST_SUITE_P(Errors, RecordQuarantineTest,
                         ::testing::Values(EIO, EACCES, EMFILE, ENOMEM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           switch (info.param) {
                             case EIO: return std::string("EIO");
                             case EACCES: return std::string("EACCES");
                             case EMFILE: return std::string("EMFILE");
                             default: return std::string("ENOMEM");
                           }
                         });

TEST(RecordQuarantineRuleTest, OnlyProvenBadFilesAreRemoved) {
  EXPECT_EQ(ActionFor(RejectReason::kUnreadable), RejectAction::kQuarantine);
  EXPECT_EQ(ActionFor(RejectReason::kOrphanOfUnreadable), RejectAction::kQuarantine);
  EXPECT_EQ(ActionFor(RejectReason::kNotAFile), RejectAction::kLeave);
  for (RejectReason r :
       {RejectReason::kTemporary, RejectReason::kBadHeader, RejectReason::kBadChecksum,
        RejectReason::kBadSize, RejectReason::kOrphan}) {
    EXPECT_EQ(ActionFor(r), RejectAction::kRemove) << RejectReasonName(r);
  }
}

}  // namespace
}  // namespace strata
