// What the disk thread refuses, and how it fails when the filesystem does:
// malformed jobs, a full queue, shutdown, a filesystem without O_DIRECT, a
// full filesystem, tmpfs. (disk_thread_test.cc holds the round trips.)
#include <gtest/gtest.h>

#include <filesystem>

#include "store/disk/disk_thread.h"
#include "store/record/record_dir.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::DiskFixture;
using testing::KeyOf;
using testing::MakeGeometry;
using testing::MakeRecord;
using testing::TestRecord;
using testing::WriteRecord;

TEST(DiskThreadTest, RejectsMalformedJobsAtSubmission) {
  CacheGeometry g = MakeGeometry(64, {4096}, 16384);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(128), std::nullopt, 2);
  std::vector<IoPiece> pages = r.pages();
  pages.pop_back();
  EXPECT_EQ(f.thread->Submit({JobId(1), WriteRecordJob{r.header, pages, r.row(), {}}}).code(),
            StatusCode::kInvalidArgument);
  pages = r.pages();
  pages[1].data += 512;  // misaligned
  EXPECT_EQ(f.thread->Submit({JobId(2), WriteRecordJob{r.header, pages, r.row(), {}}}).code(),
            StatusCode::kInvalidArgument);
  std::vector<IoPiece> row = r.row();
  row[0].bytes -= 4096;  // short row
  Status s = f.thread->Submit({JobId(3), WriteRecordJob{r.header, r.pages(), row, {}}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("row pieces cover"), std::string::npos);
  EXPECT_EQ(f.thread->Submit({JobId(4), ReadRecordJob{r.header, 3, {}, {}}}).code(),
            StatusCode::kInvalidArgument);
}

TEST(DiskThreadTest, SubmitIsBusyWhenTheOutstandingBoundIsReached) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskThreadOptions o;
  o.max_outstanding_jobs = 2;
  DiskFixture f(g, o);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  PrefixKey k = KeyOf(64);
  ASSERT_TRUE(f.thread->Submit({JobId(1), UnlinkRecordJob{k, Durability::kNone}}).ok());
  ASSERT_TRUE(f.thread->Submit({JobId(2), UnlinkRecordJob{k, Durability::kNone}}).ok());
  EXPECT_EQ(f.thread->Submit({JobId(3), UnlinkRecordJob{k, Durability::kNone}}).code(),
            StatusCode::kBusy);
  std::vector<DiskCompletion> done;
  while (done.size() < 2 && f.thread->WaitForCompletion(testing::kJobWait)) f.thread->Poll(done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(f.thread->Submit({JobId(4), UnlinkRecordJob{k, Durability::kNone}}).ok());
}

TEST(DiskThreadTest, ShutdownAbortsQueuedJobsAndRefusesNewOnes) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  ASSERT_TRUE(f.thread->Shutdown(std::chrono::milliseconds(10'000)).ok());
  EXPECT_EQ(f.thread->Submit({JobId(1), UnlinkRecordJob{KeyOf(64), Durability::kNone}}).code(),
            StatusCode::kAborted);
}

// A filesystem that refuses O_DIRECT the way tmpfs did before Linux 6.6.
class NoDirectIoFileSystem final : public testing::ForwardingFileSystem {
 public:
  Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) override {
    if (how == OpenFor::kDirectWriteNew || how == OpenFor::kDirectRead) {
      return Status::FromErrno(EINVAL, "open '" + std::string(name) + "'");
    }
    return ForwardingFileSystem::OpenAt(dir_fd, name, how);
  }
  std::string FilesystemName(int) override { return "tmpfs"; }
};

TEST(DiskThreadTest, StartFailsClearlyWhenTheFilesystemRefusesDirectIo) {
  testing::ScratchDir scratch;
  NoDirectIoFileSystem fs;
  Result<int> dir = fs.OpenDirectory(scratch.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(dir.ok());
  Result<std::unique_ptr<BlockIo>> io = OpenUringBlockIo(8);
  ASSERT_TRUE(io.ok());
  DiskThreadOptions o;
  o.max_inflight_requests = 8;
  Result<std::unique_ptr<DiskThread>> t =
      DiskThread::Start(fs, std::move(*io), *dir, scratch.path(), o);
  fs.Close(*dir);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find("tmpfs"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find(scratch.path()), std::string::npos);
  EXPECT_NE(t.status().message().find("refuses O_DIRECT"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(scratch.path() + "/" + std::string(kDirectIoProbeName)));
}

// A filesystem with no space left for preallocation.
class FullFileSystem final : public testing::ForwardingFileSystem {
 public:
  Status Allocate(int, uint64_t bytes) override {
    return Status::FromErrno(ENOSPC, "fallocate " + std::to_string(bytes) + " bytes");
  }
};

TEST(DiskThreadTest, AFullFilesystemFailsTheWriteAsRetryableAndLeavesNothing) {
  testing::ScratchDir scratch;
  FullFileSystem fs;
  Result<std::unique_ptr<RecordDir>> dir =
      RecordDir::Open(fs, scratch.path(), RecordDir::Create::kNo);
  ASSERT_TRUE(dir.ok());
  STRATA_SKIP_WITHOUT_DIRECT_IO(fs, (*dir)->fd(), scratch.path());
  Result<std::unique_ptr<BlockIo>> io = OpenUringBlockIo(8);
  ASSERT_TRUE(io.ok());
  DiskThreadOptions o;
  o.max_inflight_requests = 8;
  Result<std::unique_ptr<DiskThread>> t =
      DiskThread::Start(fs, std::move(*io), (*dir)->fd(), scratch.path(), o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  TestRecord r = MakeRecord(g, KeyOf(64), std::nullopt, 1);
  DiskCompletion w = WriteRecord(**t, r);
  EXPECT_EQ(w.status.code(), StatusCode::kFsFull);
  EXPECT_TRUE(w.status.retryable());
  EXPECT_NE(w.status.message().find(RecordFileName(r.header.key)), std::string::npos);
  EXPECT_TRUE(fs.List((*dir)->fd())->empty());
}

TEST(DiskThreadTest, StartsOrFailsClearlyOnRealTmpfs) {
  PosixFileSystem fs;
  Result<int> shm = fs.OpenDirectory("/dev/shm", DirectoryMissing::kFail);
  if (!shm.ok() || fs.FilesystemName(*shm) != "tmpfs") {
    if (shm.ok()) fs.Close(*shm);
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  }
  Status probe = ProbeDirectIo(fs, *shm, "/dev/shm");
  fs.Close(*shm);
  if (probe.ok()) GTEST_SKIP() << "tmpfs accepts O_DIRECT on this kernel (Linux 6.6 and later)";
  EXPECT_EQ(probe.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(probe.message().find("tmpfs"), std::string::npos) << probe.message();
}

}  // namespace
}  // namespace strata
