// Host-data jobs' bytes on a record link: cut into JobData chunks and put
// back together exactly, every chunk that breaks the rules refused, and a
// peer's buffers held from the first chunk (a store) or the start (a fetch)
// until the job's answer.
#include "rank_agent/host_data_jobs.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using Bytes = std::vector<std::byte>;

Bytes Pattern(size_t n, int seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return b;
}

// Pieces of the given sizes over one buffer.
HostBuffers Over(Bytes& memory, const std::vector<uint64_t>& pages, uint64_t row) {
  HostBuffers b;
  uint64_t at = 0;
  for (uint64_t n : pages) {
    b.pages.push_back({memory.data() + at, n});
    at += n;
  }
  if (row > 0) b.row.push_back({memory.data() + at, row});
  return b;
}

TEST(HostDataTest, ChunksPutBackTogetherAreTheSameBytesAcrossPieceAndChunkBoundaries) {
  const uint64_t page = (uint64_t{3} << 20) + 4096;  // pieces straddle the 4 MiB chunks
  const std::vector<uint64_t> pages = {page, page, page};
  Bytes source = Pattern(3 * page + 8192, 1);
  const HostBuffers from = Over(source, pages, 8192);
  EXPECT_EQ(HostBytes(from), source.size());
  const std::vector<wire::JobData> chunks = ChunksOf(JobId(5), from);
  ASSERT_EQ(chunks.size(), 3u);
  uint64_t offset = 0;
  for (const wire::JobData& c : chunks) {
    EXPECT_EQ(c.offset, offset);
    EXPECT_EQ(c.total, source.size());
    EXPECT_LE(c.data.size(), wire::kJobDataChunkBytesMax);
    EXPECT_TRUE(wire::CheckMessage(c).ok());
    offset += c.data.size();
  }
  Bytes target(source.size());
  HostDataReceiver receiver(Over(target, pages, 8192));
  for (const wire::JobData& c : chunks) {
    EXPECT_FALSE(receiver.complete());
    ASSERT_TRUE(receiver.Add(c).ok());
  }
  EXPECT_TRUE(receiver.complete());
  EXPECT_EQ(target, source);
}

TEST(HostDataTest, TheReceiverRefusesChunksOutOfOrderOfAnotherTotalOrPastTheEnd) {
  Bytes source = Pattern(10000, 2);
  const std::vector<wire::JobData> chunks = ChunksOf(JobId(1), Over(source, {10000}, 0));
  ASSERT_EQ(chunks.size(), 1u);
  Bytes target(10000);
  HostDataReceiver receiver(Over(target, {10000}, 0));
  wire::JobData late = chunks[0];
  late.offset = 16;
  late.data.resize(100);
  EXPECT_EQ(receiver.Add(late).code(), StatusCode::kInvalidArgument);
  wire::JobData other = chunks[0];
  other.total = 20000;
  EXPECT_EQ(receiver.Add(other).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(receiver.Add(chunks[0]).ok());
  wire::JobData more = chunks[0];
  more.offset = 10000;
  more.data.resize(1);
  Status past = receiver.Add(more);
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(past.message().find("runs past"), std::string::npos) << past.ToString();
  EXPECT_EQ(target, source);
}

RecordJob HostJob(RecordJobKind kind, uint32_t id, uint32_t tail, bool row) {
  RecordJob j;
  j.id = JobId(id);
  j.kind = kind;
  j.key = PrefixKey{uint64_t{tail} * 64, {}};
  j.tail_pages = tail;
  j.host_data = true;
  j.host_row = row;
  return j;
}

class HostDataJobsTest : public ::testing::Test {
 protected:
  RecordLayout layout_{testing::RankGeometryOf()};
  uint64_t ShareBytes(uint32_t tail, bool row) const {
    return tail * layout_.stored_page_record_bytes(false) +
           (row ? layout_.stored_row_segment_bytes(false) : 0);
  }
};

TEST_F(HostDataJobsTest, AStoreRunsOnTheBytesThatCameBeforeItAndTheyAreFreedAtItsAnswer) {
  HostDataJobs jobs(layout_);
  const RecordJob store = HostJob(RecordJobKind::kStore, 7, 3, true);
  Bytes source = Pattern(ShareBytes(3, true), 3);
  for (const wire::JobData& c : ChunksOf(JobId(7), Over(source, {source.size()}, 0))) {
    ASSERT_TRUE(jobs.OnData(c).ok());
  }
  Result<HostBuffers> b = jobs.Begin(store);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->pages.size(), 3u);
  ASSERT_EQ(b->row.size(), 1u);
  EXPECT_EQ(b->pages[0].bytes, layout_.stored_page_record_bytes(false));
  Bytes seen;
  for (const IoPiece& p : b->pages) seen.insert(seen.end(), p.data, p.data + p.bytes);
  seen.insert(seen.end(), b->row[0].data, b->row[0].data + b->row[0].bytes);
  EXPECT_EQ(seen, source);
  // A transport that was busy runs it later on the same buffers.
  Result<HostBuffers> again = jobs.Begin(store);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pages[0].data, b->pages[0].data);
  EXPECT_FALSE(jobs.Finish(JobId(7), true).has_value());  // a store returns nothing
  EXPECT_EQ(jobs.held(), 0u);
}

TEST_F(HostDataJobsTest, AStoreWithoutAllItsBytesOrOfAnotherSizeFails) {
  HostDataJobs jobs(layout_);
  EXPECT_EQ(jobs.Begin(HostJob(RecordJobKind::kStore, 1, 2, false)).status().code(),
            StatusCode::kInvalidArgument);
  Bytes source = Pattern(ShareBytes(2, false), 4);
  std::vector<wire::JobData> chunks = ChunksOf(JobId(2), Over(source, {source.size()}, 0));
  ASSERT_TRUE(jobs.OnData(chunks[0]).ok());
  // The share of a 3-page record is larger than what came.
  Result<HostBuffers> wrong = jobs.Begin(HostJob(RecordJobKind::kStore, 2, 3, false));
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("its share is"), std::string::npos);
  EXPECT_FALSE(jobs.Finish(JobId(2), false).has_value());
  EXPECT_EQ(jobs.held(), 0u);
}

TEST_F(HostDataJobsTest, PendingStoreBytesAreBoundedAndAChunkMustStartAtZero) {
  const uint64_t share = ShareBytes(2, false);
  HostDataJobs jobs(layout_, share + share / 2);
  Bytes source = Pattern(share, 5);
  const HostBuffers over = Over(source, {share}, 0);
  ASSERT_TRUE(jobs.OnData(ChunksOf(JobId(1), over)[0]).ok());
  jobs.OnJob(JobId(1));  // its Job came; held behind others, say
  Status full = jobs.OnData(ChunksOf(JobId(2), over)[0]);
  EXPECT_EQ(full.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(full.message().find("not yet run"), std::string::npos) << full.ToString();
  wire::JobData middle = ChunksOf(JobId(3), over)[0];
  middle.offset = 4096;
  middle.data.resize(4096);
  EXPECT_EQ(jobs.OnData(middle).code(), StatusCode::kInvalidArgument);
  // Once the first store ran, its bytes no longer count against the bound.
  ASSERT_TRUE(jobs.Begin(HostJob(RecordJobKind::kStore, 1, 2, false)).ok());
  EXPECT_TRUE(jobs.OnData(ChunksOf(JobId(2), over)[0]).ok());
}

TEST_F(HostDataJobsTest, AFetchReturnsWhatItReadOnlyWhenItsAnswerIsOk) {
  HostDataJobs jobs(layout_);
  RecordJob fetch = HostJob(RecordJobKind::kFetch, 9, 4, true);
  fetch.first_page = 1;  // pages 1..3 and the row
  Result<HostBuffers> b = jobs.Begin(fetch);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->pages.size(), 3u);
  Bytes read = Pattern(ShareBytes(3, true), 6);
  uint64_t at = 0;
  for (const IoPiece& p : b->pages) {
    std::memcpy(p.data, read.data() + at, p.bytes);
    at += p.bytes;
  }
  std::memcpy(b->row[0].data, read.data() + at, b->row[0].bytes);
  // Bytes from rank zero for a fetch break the protocol.
  EXPECT_EQ(jobs.OnData(ChunksOf(JobId(9), Over(read, {read.size()}, 0))[0]).code(),
            StatusCode::kInvalidArgument);
  const std::optional<FetchedShare> back = jobs.Finish(JobId(9), true);
  ASSERT_TRUE(back.has_value());
  Bytes got;
  for (const wire::JobData& c : ChunksOf(JobId(9), back->buffers)) {
    got.insert(got.end(), c.data.begin(), c.data.end());
  }
  EXPECT_EQ(got, read);
  EXPECT_EQ(jobs.held(), 0u);
  ASSERT_TRUE(jobs.Begin(HostJob(RecordJobKind::kFetch, 10, 1, false)).ok());
  EXPECT_FALSE(jobs.Finish(JobId(10), false).has_value());
  EXPECT_EQ(jobs.held(), 0u);
}

TEST_F(HostDataJobsTest, StoreBytesWhoseJobNeverCameAreDroppedOnceAnotherJobArrives) {
  HostDataJobs jobs(layout_);
  Bytes source = Pattern(ShareBytes(2, false), 7);
  const HostBuffers over = Over(source, {source.size()}, 0);
  // Store 1's bytes came whole and its Job too (held by the rules, say).
  ASSERT_TRUE(jobs.OnData(ChunksOf(JobId(1), over)[0]).ok());
  jobs.OnJob(JobId(1));
  // Store 2's bytes came, but its Job was never sent.
  ASSERT_TRUE(jobs.OnData(ChunksOf(JobId(2), over)[0]).ok());
  EXPECT_EQ(jobs.held(), 2u);
  jobs.OnJob(JobId(3));
  EXPECT_EQ(jobs.held(), 1u);
  EXPECT_TRUE(jobs.Begin(HostJob(RecordJobKind::kStore, 1, 2, false)).ok());
  EXPECT_EQ(jobs.Begin(HostJob(RecordJobKind::kStore, 2, 2, false)).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
