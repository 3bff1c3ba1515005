// The disk thread's drain guarantees, driven through a ScriptedBlockIo
// (scripted_block_io.h) that holds completions or fails a Submit call.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <set>

#include "store/disk/disk_thread.h"
#include "tests/unit/store/disk/scripted_block_io.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;
using testing::MakeGeometry;
using testing::MakeRecord;
using testing::ScriptedFixture;
using testing::TestRecord;

DiskThreadOptions SmallRequests() {
  DiskThreadOptions o;
  o.max_request_bytes = 8192;
  o.max_inflight_requests = 4;
  o.max_active_jobs = 1;
  return o;
}

TEST(DiskThreadDrainTest, AFailedSubmissionReportsOnlyAfterEveryRequestReturns) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  ScriptedFixture f(g, SmallRequests());
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  TestRecord r = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  f.io->Hold();
  f.io->FailSubmitCall(1);
  ASSERT_TRUE(f.thread->Submit({JobId(1), WriteRecordJob{r.header, r.pages(), r.row(), {}}}).ok());
  ASSERT_TRUE(f.io->WaitUntilThreadWaitsOnHeldRequests(1));
  std::vector<DiskCompletion> done;
  EXPECT_EQ(f.thread->Poll(done), 0u) << "reported while the kernel held its buffers";
  EXPECT_GT(f.io->in_kernel(), 0u);

  f.io->Release();
  ASSERT_TRUE(f.thread->WaitForCompletion(testing::kJobWait));
  EXPECT_EQ(f.io->in_kernel(), 0u);
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status.code(), StatusCode::kIoError);
  EXPECT_NE(done[0].status.message().find("scripted submit failure"), std::string::npos);
  EXPECT_FALSE(f.HasTemporaryFile());
}

TEST(DiskThreadDrainTest, ShutdownPastItsDeadlineKeepsBuffersAndCanWaitAgain) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  ScriptedFixture f(g, SmallRequests());
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  TestRecord first = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  TestRecord second = MakeRecord(g, KeyOf(320), std::nullopt, 2);
  f.io->Hold();
  ASSERT_TRUE(
      f.thread->Submit({JobId(1), WriteRecordJob{first.header, first.pages(), first.row(), {}}})
          .ok());
  ASSERT_TRUE(
      f.thread->Submit({JobId(2), WriteRecordJob{second.header, second.pages(), second.row(), {}}})
          .ok());
  ASSERT_TRUE(f.io->WaitUntilThreadWaitsOnHeldRequests(1));

  Status missed = f.thread->Shutdown(std::chrono::milliseconds(50));
  EXPECT_EQ(missed.code(), StatusCode::kAborted);
  EXPECT_NE(missed.message().find("must stay allocated"), std::string::npos);
  EXPECT_GT(f.io->in_kernel(), 0u);

  f.io->Release();
  ASSERT_TRUE(f.thread->Shutdown(testing::kJobWait).ok());
  EXPECT_EQ(f.io->in_kernel(), 0u);
  std::vector<DiskCompletion> done;
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), 2u);
  for (const DiskCompletion& c : done) EXPECT_EQ(c.status.code(), StatusCode::kAborted);
  const DiskCompletion& queued = done[0].id == JobId(2) ? done[0] : done[1];
  EXPECT_NE(queued.status.message().find("before the job started"), std::string::npos);
  EXPECT_FALSE(f.HasTemporaryFile());
  EXPECT_FALSE(std::filesystem::exists(f.dir->path() + "/" + RecordFileName(first.header.key)));
}

TEST(DiskThreadDrainTest, ShutdownReportsEveryJobExactlyOnce) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  DiskThreadOptions o = SmallRequests();
  o.max_active_jobs = 2;
  ScriptedFixture f(g, o);
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  std::vector<TestRecord> records;
  for (uint32_t i = 0; i < 6; ++i)
    records.push_back(MakeRecord(g, KeyOf(64 * (i + 1)), std::nullopt, 2));
  for (uint32_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(
        f.thread
            ->Submit({JobId(i),
                      WriteRecordJob{records[i].header, records[i].pages(), records[i].row(), {}}})
            .ok());
  }
  ASSERT_TRUE(f.thread->Shutdown(testing::kJobWait).ok());
  std::vector<DiskCompletion> done;
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), records.size());
  std::set<uint64_t> ids;
  for (const DiskCompletion& c : done) {
    ids.insert(c.id.value);
    EXPECT_TRUE(c.status.ok() || c.status.code() == StatusCode::kAborted) << c.status.ToString();
    const bool on_disk = std::filesystem::exists(f.dir->path() + "/" +
                                                 RecordFileName(records[c.id.value].header.key));
    EXPECT_EQ(on_disk, c.status.ok()) << c.id.value;
  }
  EXPECT_EQ(ids.size(), records.size());
  EXPECT_FALSE(f.HasTemporaryFile());
}

// Shutdown aborts a durable write while its fdatasync is in the kernel; the
// sync then succeeds. The write must not commit: the caller is told it did
// not, so no record may be left behind.
TEST(DiskThreadDrainTest, ASyncLandingAfterAnAbortDoesNotCommitTheRecord) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  ScriptedFixture f(g, SmallRequests());
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  TestRecord r = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  f.io->HoldOnly(BlockOp::kSyncData);
  ASSERT_TRUE(
      f.thread->Submit({JobId(1), WriteRecordJob{r.header, r.pages(), r.row(), Durability::kSync}})
          .ok());
  ASSERT_TRUE(f.io->WaitUntilThreadWaitsOnHeldRequests(1));
  EXPECT_EQ(f.thread->Shutdown(std::chrono::milliseconds(50)).code(), StatusCode::kAborted);

  f.io->Release();
  ASSERT_TRUE(f.thread->Shutdown(testing::kJobWait).ok());
  std::vector<DiskCompletion> done;
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status.code(), StatusCode::kAborted);
  EXPECT_FALSE(std::filesystem::exists(f.dir->path() + "/" + RecordFileName(r.header.key)))
      << "a write reported aborted left its record committed";
  EXPECT_FALSE(f.HasTemporaryFile());
}

// Shutdown aborts a read while its header read is in the kernel; the header
// then lands. The aborted read must only drain: no payload request goes out.
TEST(DiskThreadDrainTest, AHeaderLandingAfterAnAbortStartsNoPayload) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  std::atomic<uint32_t> reads{0};
  ScriptedFixture f(g, SmallRequests(), [&reads](std::span<const BlockRequest> requests) {
    for (const BlockRequest& q : requests) reads += q.op == BlockOp::kRead ? 1 : 0;
  });
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  TestRecord r = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  ASSERT_TRUE(f.thread->Submit({JobId(1), WriteRecordJob{r.header, r.pages(), r.row(), {}}}).ok());
  ASSERT_TRUE(f.thread->WaitForCompletion(testing::kJobWait));
  std::vector<DiskCompletion> done;
  f.thread->Poll(done);
  ASSERT_TRUE(done.size() == 1 && done[0].status.ok() && done[0].header.has_value());

  f.io->Hold();
  TestRecord into = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  ASSERT_TRUE(
      f.thread->Submit({JobId(2), ReadRecordJob{*done[0].header, 0, into.pages(), into.row()}})
          .ok());
  ASSERT_TRUE(f.io->WaitUntilThreadWaitsOnHeldRequests(1));
  EXPECT_EQ(f.thread->Shutdown(std::chrono::milliseconds(50)).code(), StatusCode::kAborted);
  EXPECT_EQ(reads.load(), 1u);  // the header's

  f.io->Release();
  ASSERT_TRUE(f.thread->Shutdown(testing::kJobWait).ok());
  done.clear();
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status.code(), StatusCode::kAborted);
  EXPECT_EQ(reads.load(), 1u) << "the aborted read went on to read its payload";
}

}  // namespace
}  // namespace strata
