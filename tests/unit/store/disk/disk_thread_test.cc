#include "store/disk/disk_thread.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>

#include <cstring>

#include "launch/presets.h"
#include "store/disk/disk_job_run.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::DiskFixture;
using testing::KeyOf;
using testing::MakeGeometry;
using testing::MakeRecord;
using testing::RunJob;
using testing::TestRecord;
using testing::WriteRecord;

// Buffers shaped like `r`'s, filled with a poison byte.
TestRecord EmptyLike(const TestRecord& r, std::byte poison = std::byte{0xEE}) {
  TestRecord out;
  out.header = r.header;
  out.extents = r.extents;
  for (const AlignedBuffer& b : r.page_buffers) {
    out.page_buffers.emplace_back(b.size());
    std::memset(out.page_buffers.back().data(), std::to_integer<int>(poison), b.size());
  }
  for (const AlignedBuffer& b : r.row_buffers) {
    out.row_buffers.emplace_back(b.size());
    std::memset(out.row_buffers.back().data(), std::to_integer<int>(poison), b.size());
  }
  return out;
}

bool SameBytes(const AlignedBuffer& a, const AlignedBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

DiskCompletion ReadBack(DiskThread& t, const RecordHeader& expected, TestRecord& into,
                        uint32_t first_page = 0, bool with_row = true) {
  static uint64_t next_id = 1'000'000;
  std::vector<IoPiece> pages = into.pages();
  pages.erase(pages.begin(), pages.begin() + first_page);
  return RunJob(t,
                {JobId(next_id++), ReadRecordJob{expected, first_page, pages,
                                                 with_row ? into.row() : std::vector<IoPiece>{}}});
}

std::string FilePath(const DiskFixture& f, const PrefixKey& key) {
  return f.dir_path + "/" + RecordFileName(key);
}

// Flips one bit of the file at `offset` (page cache write; the disk thread
// reads with O_DIRECT, which sees it).
void FlipBit(const std::string& path, uint64_t offset) {
  FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fseek(f, static_cast<long>(offset), SEEK_SET), 0);
  int c = std::fgetc(f);
  ASSERT_NE(c, EOF);
  ASSERT_EQ(std::fseek(f, static_cast<long>(offset), SEEK_SET), 0);
  std::fputc(c ^ 0x10, f);
  std::fclose(f);
}

void RoundTrip(const CacheGeometry& g, uint32_t pages, bool replicated,
               DiskThreadOptions options = {}) {
  DiskFixture f(g, options);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf((pages + 2) * 64 + 3), KeyOf(64), pages, 8192, replicated);
  DiskCompletion w = WriteRecord(*f.thread, r);
  ASSERT_TRUE(w.status.ok()) << w.status.ToString();
  ASSERT_TRUE(w.header.has_value());
  EXPECT_NE(w.header->row_checksum, 0u);
  EXPECT_EQ(w.payload_bytes, pages * r.extents.page_record_bytes + r.extents.row_segment_bytes);
  struct stat st {};
  ASSERT_EQ(::stat(FilePath(f, r.header.key).c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), r.extents.file_bytes_with_row());

  TestRecord back = EmptyLike(r);
  DiskCompletion rd = ReadBack(*f.thread, *w.header, back);
  ASSERT_TRUE(rd.status.ok()) << rd.status.ToString();
  for (uint32_t p = 0; p < pages; ++p)
    EXPECT_TRUE(SameBytes(back.page_buffers[p], r.page_buffers[p])) << p;
  for (size_t i = 0; i < r.row_buffers.size(); ++i)
    EXPECT_TRUE(SameBytes(back.row_buffers[i], r.row_buffers[i]));
}

TEST(DiskThreadTest, RoundTripsATinyGeometry) {
  RoundTrip(MakeGeometry(64, {4096, 4096}, 8192), 3, false);
}

TEST(DiskThreadTest, RoundTripsPlanesSmallerThan4KiB) {
  RoundTrip(MakeGeometry(16, {100, 512, 4095, 7}, 33), 5, false);
}

TEST(DiskThreadTest, RoundTripsSeveralRanksAndARowOfManyPieces) {
  RoundTrip(MakeGeometry(64, {16384, 16384, 4096 * 3 + 1}, 200 * 1024 + 9, 3), 4, false);
}

TEST(DiskThreadTest, RoundTripsReplicatedShares) {
  RoundTrip(MakeGeometry(64, {8192, 100}, 5000, 4), 3, true);
}

TEST(DiskThreadTest, RoundTripsEveryPreset) {
  for (const GeometryPreset& p : GeometryPresets()) {
    SCOPED_TRACE(std::string(p.name));
    RoundTrip(*PresetGeometry(p.name, 2, 16, 4), 2, false);
  }
}

TEST(DiskThreadTest, RoundTripsWhenPagesAreSplitAcrossRequests) {
  DiskThreadOptions small;
  small.max_request_bytes = 8192;  // every page record spans several requests
  small.max_inflight_requests = 4;
  RoundTrip(MakeGeometry(64, {16384, 4096, 100}, 30000, 2), 6, false, small);
}

TEST(DiskThreadTest, RoundTripsARecordWithNoTailPages) {
  RoundTrip(MakeGeometry(64, {4096}, 4096), 0, false);
}

TEST(DiskThreadTest, CutsChunksAtTheRequestBound) {
  std::vector<AlignedBuffer> buffers;
  buffers.emplace_back(12288);
  buffers.emplace_back(4096);
  buffers.emplace_back(8192);
  std::vector<IoPiece> pieces;
  for (const AlignedBuffer& b : buffers) pieces.push_back({b.data(), b.size()});
  std::vector<disk_internal::Chunk> chunks = disk_internal::CutIntoChunks(pieces, 40960, 8192);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].offset, 40960u);
  EXPECT_EQ(chunks[0].iov.size(), 1u);
  EXPECT_EQ(chunks[1].offset, 40960u + 8192);
  ASSERT_EQ(chunks[1].iov.size(), 2u);  // last 4 KiB of piece 0, all of piece 1
  EXPECT_EQ(chunks[1].first_piece, 0u);
  EXPECT_EQ(chunks[1].last_piece, 1u);
  EXPECT_EQ(chunks[2].first_piece, 2u);
  EXPECT_EQ(chunks[2].iov[0].iov_len, 8192u);
}

TEST(DiskThreadTest, WritesPageOnlyRecordsWhoseRowIsAbsent) {
  CacheGeometry g = MakeGeometry(64, {4096}, 8192);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(128), std::nullopt, 2);
  DiskCompletion w = WriteRecord(*f.thread, r, /*with_row=*/false);
  ASSERT_TRUE(w.status.ok()) << w.status.ToString();
  EXPECT_EQ(w.header->row_checksum, 0u);
  struct stat st {};
  ASSERT_EQ(::stat(FilePath(f, r.header.key).c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), r.extents.row_segment_offset);
  TestRecord back = EmptyLike(r);
  EXPECT_EQ(ReadBack(*f.thread, *w.header, back).status.code(), StatusCode::kNotFound);
  DiskCompletion pages_only = ReadBack(*f.thread, *w.header, back, 0, /*with_row=*/false);
  EXPECT_TRUE(pages_only.status.ok()) << pages_only.status.ToString();
}

TEST(DiskThreadTest, ReadOfAPageSuffixVerifiesExactlyThePagesRead) {
  CacheGeometry g = MakeGeometry(64, {8192, 100}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(6 * 64), std::nullopt, 6);
  DiskCompletion w = WriteRecord(*f.thread, r);
  ASSERT_TRUE(w.status.ok()) << w.status.ToString();
  FlipBit(FilePath(f, r.header.key), r.extents.page_offset(1) + 10);  // page 1 is bad

  TestRecord back = EmptyLike(r);
  DiskCompletion suffix = ReadBack(*f.thread, *w.header, back, 2);
  ASSERT_TRUE(suffix.status.ok()) << suffix.status.ToString();
  for (uint32_t p = 2; p < 6; ++p) EXPECT_TRUE(SameBytes(back.page_buffers[p], r.page_buffers[p]));
  EXPECT_EQ(std::to_integer<int>(back.page_buffers[1].data()[0]), 0xEE);  // not read

  DiskCompletion from_one = ReadBack(*f.thread, *w.header, back, 1);
  EXPECT_EQ(from_one.status.code(), StatusCode::kCorruption);
  EXPECT_EQ(from_one.bad_page, 1u);
}

TEST(DiskThreadTest, FlippedBitInAPageNamesThePage) {
  CacheGeometry g = MakeGeometry(64, {4096, 4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(320), std::nullopt, 5);
  DiskCompletion w = WriteRecord(*f.thread, r);
  ASSERT_TRUE(w.status.ok()) << w.status.ToString();
  FlipBit(FilePath(f, r.header.key), r.extents.page_offset(3) + 4096 + 77);
  FlipBit(FilePath(f, r.header.key), r.extents.page_offset(4) + 5);
  TestRecord back = EmptyLike(r);
  DiskCompletion rd = ReadBack(*f.thread, *w.header, back);
  EXPECT_EQ(rd.status.code(), StatusCode::kCorruption);
  EXPECT_EQ(rd.bad_page, 3u);  // the first bad page
  EXPECT_NE(rd.status.message().find("page 3 of 5 failed its checksum"), std::string::npos)
      << rd.status.message();
  EXPECT_EQ(f.thread->stats().checksum_failures, 1u);
}

TEST(DiskThreadTest, FlippedBitInTheRowFailsTheRow) {
  CacheGeometry g = MakeGeometry(64, {4096}, 3 * 4096, 2);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(128), std::nullopt, 2, 4096);
  DiskCompletion w = WriteRecord(*f.thread, r);
  ASSERT_TRUE(w.status.ok()) << w.status.ToString();
  FlipBit(FilePath(f, r.header.key), r.extents.row_segment_offset + 5 * 4096 + 1);
  TestRecord back = EmptyLike(r);
  DiskCompletion rd = ReadBack(*f.thread, *w.header, back);
  EXPECT_EQ(rd.status.code(), StatusCode::kCorruption);
  EXPECT_FALSE(rd.bad_page.has_value());
  EXPECT_NE(rd.status.message().find("row segment failed its checksum"), std::string::npos);
  EXPECT_TRUE(ReadBack(*f.thread, *w.header, back, 0, /*with_row=*/false).status.ok());
}

TEST(DiskThreadTest, AChangedHeaderNeverEnlargesARead) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord small = MakeRecord(g, KeyOf(640), std::nullopt, 2);
  DiskCompletion w = WriteRecord(*f.thread, small);
  ASSERT_TRUE(w.status.ok());
  // The file is replaced by a record of the same key with more pages.
  TestRecord big = MakeRecord(g, KeyOf(640), std::nullopt, 8);
  ASSERT_TRUE(WriteRecord(*f.thread, big).status.ok());
  TestRecord back = EmptyLike(small);
  DiskCompletion rd = ReadBack(*f.thread, *w.header, back);
  EXPECT_EQ(rd.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(rd.status.message().find("tail_page_count"), std::string::npos) << rd.status.message();
  for (const AlignedBuffer& b : back.page_buffers) {
    EXPECT_EQ(std::to_integer<int>(b.data()[0]), 0xEE);  // no payload read happened
  }
  EXPECT_EQ(f.thread->stats().header_mismatches, 1u);
}

TEST(DiskThreadTest, ReadOfAMissingRecordIsNotFound) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(64), std::nullopt, 1);
  TestRecord back = EmptyLike(r);
  EXPECT_EQ(ReadBack(*f.thread, r.header, back).status.code(), StatusCode::kNotFound);
}

TEST(DiskThreadTest, TruncateDropsTheRowAndKeepsThePages) {
  CacheGeometry g = MakeGeometry(64, {4096}, 8192);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(192), std::nullopt, 3);
  DiskCompletion w = WriteRecord(*f.thread, r);
  ASSERT_TRUE(w.status.ok());
  DiskCompletion t = RunJob(*f.thread, {JobId(7), TruncateRecordJob{*w.header, Durability::kSync}});
  ASSERT_TRUE(t.status.ok()) << t.status.ToString();
  struct stat st {};
  ASSERT_EQ(::stat(FilePath(f, r.header.key).c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), r.extents.row_segment_offset);
  TestRecord back = EmptyLike(r);
  EXPECT_TRUE(ReadBack(*f.thread, *w.header, back, 0, false).status.ok());
  EXPECT_EQ(ReadBack(*f.thread, *w.header, back).status.code(), StatusCode::kNotFound);
}

TEST(DiskThreadTest, TruncateRefusesAFileWhoseHeaderDiffers) {
  CacheGeometry g = MakeGeometry(64, {4096}, 8192);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(192), std::nullopt, 3);
  DiskCompletion w = WriteRecord(*f.thread, r);
  ASSERT_TRUE(w.status.ok());
  RecordHeader other = *w.header;
  other.tail_page_count = 2;
  DiskCompletion t = RunJob(*f.thread, {JobId(8), TruncateRecordJob{other, Durability::kNone}});
  EXPECT_EQ(t.status.code(), StatusCode::kFailedPrecondition);
  struct stat st {};
  ASSERT_EQ(::stat(FilePath(f, r.header.key).c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), r.extents.file_bytes_with_row());
}

TEST(DiskThreadTest, UnlinkRemovesAndToleratesAMissingFile) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(64), std::nullopt, 1);
  ASSERT_TRUE(WriteRecord(*f.thread, r, true, Durability::kSync).status.ok());
  EXPECT_TRUE(
      RunJob(*f.thread, {JobId(9), UnlinkRecordJob{r.header.key, Durability::kSync}}).status.ok());
  struct stat st {};
  EXPECT_NE(::stat(FilePath(f, r.header.key).c_str(), &st), 0);
  EXPECT_TRUE(
      RunJob(*f.thread, {JobId(10), UnlinkRecordJob{r.header.key, Durability::kNone}}).status.ok());
}

TEST(DiskThreadTest, ACompletionRaisesTheOwnersSignal) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  auto signal = std::make_shared<WakeSignal>();
  f.thread->NotifyOnCompletion(signal);
  ASSERT_TRUE(f.thread->Submit({JobId(1), UnlinkRecordJob{KeyOf(64), Durability::kNone}}).ok());
  ASSERT_TRUE(signal->WaitFor(testing::kJobWait)) << "the completion never raised the signal";
  std::vector<DiskCompletion> out;
  f.thread->Poll(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, JobId(1));
  EXPECT_TRUE(out[0].status.ok()) << out[0].status.ToString();
}

TEST(DiskThreadTest, ASignalAttachedWhileACompletionWaitsIsRaisedAtOnce) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  ASSERT_TRUE(f.thread->Submit({JobId(1), UnlinkRecordJob{KeyOf(64), Durability::kNone}}).ok());
  ASSERT_TRUE(f.thread->WaitForCompletion(testing::kJobWait));
  auto signal = std::make_shared<WakeSignal>();
  f.thread->NotifyOnCompletion(signal);
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  std::vector<DiskCompletion> out;
  EXPECT_EQ(f.thread->Poll(out), 1u);
}

TEST(DiskThreadTest, LeavesNoTemporaryFileBehind) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  TestRecord r = MakeRecord(g, KeyOf(64), std::nullopt, 1);
  ASSERT_TRUE(WriteRecord(*f.thread, r, true, Durability::kSync).status.ok());
  Result<std::vector<std::string>> names = f.fs.List(f.dir->fd());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{RecordFileName(r.header.key)});
}

TEST(DiskThreadTest, ManyConcurrentJobsAllComplete) {
  CacheGeometry g = MakeGeometry(64, {16384, 4096}, 40000, 2);
  DiskFixture f(g);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  std::vector<TestRecord> records;
  for (uint32_t i = 0; i < 12; ++i)
    records.push_back(MakeRecord(g, KeyOf(64 * (i + 1)), std::nullopt, 1 + i % 4));
  for (uint32_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(
        f.thread
            ->Submit({JobId(i),
                      WriteRecordJob{records[i].header, records[i].pages(), records[i].row(), {}}})
            .ok());
  }
  std::vector<DiskCompletion> done;
  while (done.size() < records.size() && f.thread->WaitForCompletion(testing::kJobWait)) {
    f.thread->Poll(done);
  }
  ASSERT_EQ(done.size(), records.size());
  for (const DiskCompletion& c : done) {
    ASSERT_TRUE(c.status.ok()) << c.status.ToString();
    TestRecord back = EmptyLike(records[c.id.value]);
    ASSERT_TRUE(ReadBack(*f.thread, *c.header, back).status.ok());
    EXPECT_TRUE(SameBytes(back.row_buffers[0], records[c.id.value].row_buffers[0]));
  }
  DiskThreadStats stats = f.thread->stats();
  EXPECT_EQ(stats.jobs_completed, 2 * records.size());
  EXPECT_EQ(stats.jobs_failed, 0u);
  uint64_t payload = 0;
  for (const TestRecord& r : records) {
    payload += r.header.tail_page_count * r.extents.page_record_bytes + r.extents.row_segment_bytes;
  }
  EXPECT_EQ(stats.bytes_written, payload);
  EXPECT_EQ(stats.bytes_read, payload);
  EXPECT_GT(stats.write_hash_ns, 0u);
  EXPECT_GT(stats.busy_ns, 0u);
}

TEST(DiskThreadTest, RunsWithSchedBatchAndAPositiveNice) {
  CacheGeometry g = MakeGeometry(64, {4096}, 4096);
  DiskThreadOptions o;
  o.nice = 7;
  DiskFixture f(g, o);
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  const int tid = f.thread->thread_id();
  ASSERT_GT(tid, 0);
  EXPECT_EQ(sched_getscheduler(tid), SCHED_BATCH);
  errno = 0;
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(tid)), 7);
  EXPECT_TRUE(f.thread->stats().scheduling_applied);
}

}  // namespace
}  // namespace strata
