// The disk thread keeps its queue full while it hashes: a write's pages are
// hashed after the request carrying them is submitted, and a read's landed
// pages after the slot their request freed is refilled (disk_job_run.h,
// HashSome). Observed through a ScriptedBlockIo that notes, at each Submit,
// how much checksum work the thread had done by then.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

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

struct SubmitCall {
  uint64_t hash_ns;        // the thread's checksum CPU time when it submitted
  uint32_t data_requests;  // reads or writes in the call
};

// A fixture whose Submits are logged with the thread's hash counters.
struct LoggedFixture {
  std::atomic<DiskThread*> thread{nullptr};
  std::vector<SubmitCall> calls;  // written on the disk thread, read after a completion
  ScriptedFixture f;

  explicit LoggedFixture(const CacheGeometry& g, DiskThreadOptions o)
      : f(g, o, [this](std::span<const BlockRequest> requests) {
          DiskThread* t = thread.load();
          const DiskThreadStats s = t != nullptr ? t->stats() : DiskThreadStats{};
          uint32_t data = 0;
          for (const BlockRequest& r : requests) {
            data += r.op == BlockOp::kRead || r.op == BlockOp::kWrite ? 1 : 0;
          }
          calls.push_back({s.write_hash_ns + s.read_hash_ns, data});
        }) {
    thread = f.thread.get();
  }
};

// One request in flight, a page per request: every page is its own chunk.
DiskThreadOptions OneRequestAtATime() {
  DiskThreadOptions o;
  o.max_request_bytes = 16384;
  o.max_inflight_requests = 1;
  o.max_active_jobs = 1;
  return o;
}

// Submits one job and waits for its completion.
DiskCompletion RunJob(DiskThread& thread, DiskJob job) {
  const JobId id = job.id;
  if (Status s = thread.Submit(std::move(job)); !s.ok()) return {id, s, 0, {}, {}};
  std::vector<DiskCompletion> done;
  if (!thread.WaitForCompletion(testing::kJobWait) || thread.Poll(done) != 1) {
    return {id, Status::Internal("no single completion"), 0, {}, {}};
  }
  return std::move(done[0]);
}

// Writes `r` and returns its header as written (with the row's sum).
RecordHeader WriteAndGetHeader(DiskThread& thread, const TestRecord& r) {
  DiskCompletion c = RunJob(thread, {JobId(1), WriteRecordJob{r.header, r.pages(), r.row(), {}}});
  EXPECT_TRUE(c.status.ok()) << c.status.ToString();
  return c.header.value_or(r.header);
}

TEST(DiskThreadHashingTest, AWritesFirstRequestIsSubmittedBeforeAnyPageIsHashed) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  LoggedFixture lf(g, OneRequestAtATime());
  STRATA_DISK_FIXTURE_OR_SKIP(lf.f);
  TestRecord r = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  const RecordHeader written = WriteAndGetHeader(*lf.f.thread, r);
  ASSERT_FALSE(lf.calls.empty());
  EXPECT_EQ(lf.calls.front().data_requests, 1u);
  EXPECT_EQ(lf.calls.front().hash_ns, 0u) << "a page was hashed before the first write went out";
  EXPECT_GT(lf.f.thread->stats().write_hash_ns, 0u);

  // What was written reads back and verifies: the sums are of the bytes.
  TestRecord into = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  for (AlignedBuffer& b : into.page_buffers) std::memset(b.data(), 0, b.size());
  DiskCompletion read =
      RunJob(*lf.f.thread, {JobId(2), ReadRecordJob{written, 0, into.pages(), into.row()}});
  EXPECT_TRUE(read.status.ok()) << read.status.ToString();
  for (size_t p = 0; p < r.page_buffers.size(); ++p) {
    EXPECT_EQ(std::memcmp(into.page_buffers[p].data(), r.page_buffers[p].data(),
                          r.page_buffers[p].size()),
              0)
        << "page " << p;
  }
}

TEST(DiskThreadHashingTest, AReadRefillsTheFreedSlotBeforeHashingWhatLanded) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  LoggedFixture lf(g, OneRequestAtATime());
  STRATA_DISK_FIXTURE_OR_SKIP(lf.f);
  TestRecord r = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  const RecordHeader written = WriteAndGetHeader(*lf.f.thread, r);
  const uint64_t hashed_by_write = lf.f.thread->stats().write_hash_ns;
  const size_t write_calls = lf.calls.size();

  TestRecord into = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  DiskCompletion read =
      RunJob(*lf.f.thread, {JobId(2), ReadRecordJob{written, 0, into.pages(), into.row()}});
  ASSERT_TRUE(read.status.ok()) << read.status.ToString();
  EXPECT_GT(lf.f.thread->stats().read_hash_ns, 0u);
  // The read's requests: header, checksums, then one per page. When the
  // second page's request went out, the first page had landed but was not
  // hashed yet.
  std::vector<SubmitCall> reads(lf.calls.begin() + static_cast<ptrdiff_t>(write_calls),
                                lf.calls.end());
  ASSERT_GE(reads.size(), 4u);
  EXPECT_EQ(reads[3].hash_ns, hashed_by_write)
      << "the landed page was hashed before its slot was refilled";
}

}  // namespace
}  // namespace strata
