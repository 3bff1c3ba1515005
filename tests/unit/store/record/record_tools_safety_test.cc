// fsck's safety rules: memory bounded whatever a header claims (a crafted
// sparse file of terabytes), and a read error quarantines a file instead of
// deleting it.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cerrno>
#include <filesystem>
#include <map>

#include "launch/record_tools.h"
#include "store/record/record_dir.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;
using testing::MakeGeometry;
using testing::ScratchDir;

uint64_t MaxRssBytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

// A record header whose sizes add up to `pages` pages of 16 MiB (4 TiB for
// 2^18 pages), written into a sparse file of exactly that length whose
// checksums are all zero.
TEST(RecordToolsSafetyTest, FsckOfACraftedSparseFileClaimingTerabytesUsesBoundedMemory) {
  ScratchDir scratch;
  const CacheGeometry g = MakeGeometry(64, {uint64_t{16} << 20}, 4096);
  const std::string dir =
      RecordDirPath(scratch.path(), testing::TestIdentity(), ComputeLayoutFingerprint(g));
  ASSERT_TRUE(std::filesystem::create_directory(dir));
  RecordHeader h;
  h.identity = testing::TestIdentity();
  h.fingerprint = ComputeLayoutFingerprint(g);
  h.key = KeyOf(64);
  h.bucket = h.key.digest;
  h.tail_page_count = 1u << 18;
  h.shape = ShapeOf(g);
  Result<RecordExtents> e = ComputeExtents(h);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_GE(e->file_bytes_with_row(), uint64_t{4} << 40);
  std::vector<std::byte> header(kRecordHeaderBytes);
  ASSERT_TRUE(EncodeRecordHeader(h, header).ok());
  PosixFileSystem fs;
  {
    Result<int> d = fs.OpenDirectory(dir, DirectoryMissing::kFail);
    ASSERT_TRUE(d.ok());
    Result<int> fd = fs.OpenAt(*d, RecordFileName(h.key), OpenFor::kWriteNew);
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(fs.WriteAt(*fd, header, 0).ok());
    const Status grown = fs.Truncate(*fd, e->file_bytes_with_row());
    fs.Close(*fd);
    fs.Close(*d);
    if (!grown.ok()) GTEST_SKIP() << "no sparse 4 TiB file here: " << grown.ToString();
  }
  const uint64_t rss_before = MaxRssBytes();
  Result<FsckReport> r = RunFsck(fs, dir, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].reason, RejectReason::kBadChecksum);
  EXPECT_NE(r->problems[0].detail.find("page 0 of 262144"), std::string::npos)
      << r->problems[0].detail;
  EXPECT_LT(MaxRssBytes(), rss_before + (uint64_t{64} << 20));
}

// Fails every read past the header of one file (the scan reads the header
// at offset 0; fsck's verification reads the pages).
class PayloadReadFails final : public testing::ForwardingFileSystem {
 public:
  explicit PayloadReadFails(std::string name) : name_(std::move(name)) {}
  Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) override {
    Result<int> fd = ForwardingFileSystem::OpenAt(dir_fd, name, how);
    // Descriptor numbers are reused: only the named file's current one fails.
    if (fd.ok() && name == name_) failing_fd_ = *fd;
    if (fd.ok() && name != name_ && *fd == failing_fd_) failing_fd_ = -1;
    return fd;
  }
  Result<uint64_t> ReadAt(int fd, std::span<std::byte> out, uint64_t offset) override {
    if (fd == failing_fd_ && offset > 0) return Status::FromErrno(EIO, "pread (test)");
    return ForwardingFileSystem::ReadAt(fd, out, offset);
  }

 private:
  std::string name_;
  int failing_fd_ = -1;
};

TEST(RecordToolsSafetyTest, RepairQuarantinesAFileItCouldNotReadAndRemovesNothingGood) {
  const CacheGeometry g = MakeGeometry(64, {4096, 300}, 10000);
  testing::DiskFixture f(g);
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  for (uint64_t consumed : {64, 128}) {
    testing::TestRecord r = testing::MakeRecord(
        g, KeyOf(consumed), consumed == 128 ? std::optional(KeyOf(64)) : std::nullopt, 2);
    ASSERT_TRUE(testing::WriteRecord(*f.thread, r).status.ok());
  }
  f.thread.reset();
  f.dir.reset();
  PayloadReadFails fs(RecordFileName(KeyOf(64)));
  Result<FsckReport> r = RunFsck(fs, f.dir_path, {.repair = true, .progress = nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->problems.size(), 2u);  // 64 unreadable, 128 below it
  EXPECT_EQ(r->removed, 0u);
  EXPECT_EQ(r->quarantined, 2u);
  for (const FsckProblem& p : r->problems) {
    EXPECT_TRUE(p.quarantined) << p.name;
    EXPECT_FALSE(p.removed) << p.name;
    EXPECT_TRUE(std::filesystem::exists(f.dir_path + "/quarantine/" + p.name)) << p.name;
  }
  // In whatever order fsck lists them: the unreadable parent, then its child.
  std::map<std::string, RejectReason> reasons;
  for (const FsckProblem& p : r->problems) reasons[p.name] = p.reason;
  EXPECT_EQ(reasons[RecordFileName(KeyOf(64))], RejectReason::kUnreadable);
  EXPECT_EQ(reasons[RecordFileName(KeyOf(128))], RejectReason::kOrphanOfUnreadable);
}

}  // namespace
}  // namespace strata
