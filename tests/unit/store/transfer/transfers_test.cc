#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <latch>

#include "launch/presets.h"
#include "store/transfer/host_planes.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/threaded_transfers.h"
#include "tests/unit/store/transfer/host_transfers_test_support.h"

namespace strata {
namespace {

using namespace transfers_test;

TEST(HostTransfersTest, RoundTripIntoDifferentIdsIsByteExact) {
  for (const char* preset : {"tiny", "small-planes", "qwen-like"}) {
    CacheGeometry g = *PresetGeometry(preset, 2, /*pages=*/140, /*rows=*/4);
    HostPlanes hp(g);
    auto t = *MakeHostTransfers(hp);
    RecordLayout layout(g);
    const size_t n = 64;
    std::vector<PageId> src, dst;
    for (uint32_t i = 0; i < n; ++i) {
      src.push_back(PageId(3 + 2 * i));  // scattered ids
      dst.push_back(PageId(139 - i));
    }
    Fill(hp, src, StateSlot(1), 7);
    Slabs s = MakeSlabs(layout, n);
    ASSERT_TRUE(t->Submit(Job(1, TransferDirection::kDeviceToHost, src, s, StateSlot(1))).ok());
    TransferCompletion out = WaitOne(*t);
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    EXPECT_EQ(out.bytes, n * (g.ranks[0].page_bytes() + g.ranks[1].page_bytes()) +
                             g.ranks[0].row.unit_bytes + g.ranks[1].row.unit_bytes);
    Poison(hp);
    ASSERT_TRUE(t->Submit(Job(2, TransferDirection::kHostToDevice, dst, s, StateSlot(3))).ok());
    ASSERT_TRUE(WaitOne(*t).status.ok());
    EXPECT_EQ(Check(hp, dst, StateSlot(3), 7), "") << preset;
    ASSERT_TRUE(t->Close(10s).ok());
  }
}

TEST(HostTransfersTest, CopyOutZeroesPlanePaddingInTheSlab) {
  RankGeometry r{{"row", 100}, {{"a", 512}, {"b", 4096}}, 2, 8};
  CacheGeometry g{64, {r}};
  HostPlanes hp(g);
  auto t = *MakeHostTransfers(hp);
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 1);
  std::memset(s.pages[0], 0x5a, layout.page_record_bytes());
  std::memset(s.row[0].data, 0x5a, s.row[0].bytes);
  std::memset(hp.page(0, 0, PageId(0)), 1, 512);
  ASSERT_TRUE(
      t->Submit(Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0))).ok());
  ASSERT_TRUE(WaitOne(*t).status.ok());
  for (uint64_t i = 512; i < 4096; ++i) ASSERT_EQ(s.pages[0][i], 0) << i;
  for (uint64_t i = 100; i < 4096; ++i) ASSERT_EQ(s.row[0].data[i], 0) << i;
}

TEST(HostTransfersTest, ReplicatedShareFansOutToEveryRank) {
  CacheGeometry g = *PresetGeometry("tiny", 3, 16, 2);
  HostPlanes hp(g);
  auto t = *MakeHostTransfers(hp);
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 2);
  // One stored share: rank 0's layout only.
  for (uint8_t* rec : s.pages) {
    for (uint64_t i = 0; i < layout.replicated_page_record_bytes(); ++i)
      rec[i] = static_cast<uint8_t>(i * 7);
  }
  for (uint64_t i = 0; i < g.ranks[0].row.unit_bytes; ++i)
    s.row[0].data[i] = static_cast<uint8_t>(i * 3);
  TransferJob j = Job(9, TransferDirection::kHostToDevice, {PageId(5), PageId(6)}, s, StateSlot(1));
  j.replicated_pages = j.replicated_row = true;
  ASSERT_TRUE(t->Submit(std::move(j)).ok());
  ASSERT_TRUE(WaitOne(*t).status.ok());
  for (uint32_t r = 0; r < 3; ++r) {
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      EXPECT_EQ(std::memcmp(hp.page(r, p, PageId(6)), s.pages[1] + layout.plane_offset(0, p),
                            g.ranks[r].page_planes[p].unit_bytes),
                0);
    }
    EXPECT_EQ(std::memcmp(hp.row(r, StateSlot(1)), s.row[0].data, g.ranks[r].row.unit_bytes), 0);
  }
}

TEST(HostTransfersTest, RowSpanningSeveralPiecesRoundTrips) {
  // A 3 MiB row over 576 KiB slots: each rank's row crosses piece boundaries.
  CacheGeometry g = *PresetGeometry("qwen-like", 2, 4, 2);
  HostPlanes hp(g);
  auto t = *MakeHostTransfers(hp);
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 1);
  ASSERT_GT(s.row.size(), 5u);
  Fill(hp, {PageId(0)}, StateSlot(0), 3);
  ASSERT_TRUE(
      t->Submit(Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0))).ok());
  ASSERT_TRUE(WaitOne(*t).status.ok());
  Poison(hp);
  ASSERT_TRUE(
      t->Submit(Job(2, TransferDirection::kHostToDevice, {PageId(0)}, s, StateSlot(0))).ok());
  ASSERT_TRUE(WaitOne(*t).status.ok());
  EXPECT_EQ(Check(hp, {PageId(0)}, StateSlot(0), 3), "");
}

TEST(HostTransfersTest, RejectsMalformedJobs) {
  CacheGeometry g = *PresetGeometry("tiny", 2, 8, 2);
  HostPlanes hp(g);
  auto t = *MakeHostTransfers(hp);
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 1);
  TransferJob bad = Job(1, TransferDirection::kDeviceToHost, {PageId(8)}, s, StateSlot(0));
  EXPECT_EQ(t->Submit(bad).code(), StatusCode::kInvalidArgument);  // page id out of range
  bad = Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(2));
  EXPECT_EQ(t->Submit(bad).code(), StatusCode::kInvalidArgument);  // slot out of range
  bad = Job(1, TransferDirection::kDeviceToHost, {PageId(0), PageId(1)}, s, StateSlot(0));
  EXPECT_EQ(t->Submit(bad).code(), StatusCode::kInvalidArgument);  // ids vs records
  bad = Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0));
  bad.replicated_pages = true;
  EXPECT_EQ(t->Submit(bad).code(), StatusCode::kInvalidArgument);  // copy-out is per rank
  bad = Job(1, TransferDirection::kHostToDevice, {PageId(0)}, s, StateSlot(0));
  bad.row_pieces[0].bytes = 100;
  EXPECT_EQ(t->Submit(bad).code(), StatusCode::kInvalidArgument);  // row pieces too small
  std::vector<PageId> many(65, PageId(0));
  bad = Job(1, TransferDirection::kDeviceToHost, many, s, StateSlot(0));
  bad.page_records.assign(65, s.pages[0]);
  EXPECT_EQ(t->Submit(bad).code(), StatusCode::kInvalidArgument);  // window > 64 pages
}

// A test double behind the CopyEngine interface: blocks until released, and
// can fail its rank's batches.
class GatedEngine : public CopyEngine {
 public:
  GatedEngine(std::shared_ptr<std::latch> gate, bool fail, std::atomic<int>* batches)
      : gate_(std::move(gate)), fail_(fail), batches_(batches) {}
  Status Start() override { return Status::Ok(); }
  Status CopyBatch(TransferDirection, std::span<const CopyDescriptor>) override {
    gate_->wait();
    batches_->fetch_add(1);
    return fail_ ? Status::IoError("injected copy failure") : Status::Ok();
  }
  void Stop() override {}

 private:
  std::shared_ptr<std::latch> gate_;
  bool fail_;
  std::atomic<int>* batches_;
};

class FailingStartEngine : public CopyEngine {
 public:
  Status Start() override { return Status::Unavailable("no device"); }
  Status CopyBatch(TransferDirection, std::span<const CopyDescriptor>) override {
    return Status::Ok();
  }
  void Stop() override {}
};

TEST(ThreadedTransfersTest, FullQueueSaysBusyWithoutBlockingAndQueuesNothing) {
  CacheGeometry g = *PresetGeometry("tiny", 2, 8, 2);
  HostPlanes hp(g);
  auto gate = std::make_shared<std::latch>(1);
  std::atomic<int> batches{0};
  std::vector<std::unique_ptr<CopyEngine>> engines;
  engines.push_back(std::make_unique<GatedEngine>(gate, false, &batches));
  engines.push_back(std::make_unique<GatedEngine>(gate, false, &batches));
  auto t = *ThreadedTransfers::Create(g, {hp.planes(0), hp.planes(1)}, std::move(engines),
                                      {.queue_depth = 2, .low_priority = false});
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 1);
  ASSERT_TRUE(
      t->Submit(Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0))).ok());
  ASSERT_TRUE(
      t->Submit(Job(2, TransferDirection::kDeviceToHost, {PageId(1)}, s, StateSlot(0))).ok());
  Status busy = t->Submit(Job(3, TransferDirection::kDeviceToHost, {PageId(2)}, s, StateSlot(0)));
  EXPECT_EQ(busy.code(), StatusCode::kBusy);
  gate->count_down();
  std::vector<TransferCompletion> done;
  for (int i = 0; i < 100 && done.size() < 2; ++i) {
    t->WaitForCompletion(100ms);
    t->Poll(done);
  }
  ASSERT_EQ(done.size(), 2u);  // job 3 was never queued on any rank
  EXPECT_TRUE(t->Close(10s).ok());
  EXPECT_EQ(
      t->Submit(Job(4, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0))).code(),
      StatusCode::kAborted);
}

TEST(ThreadedTransfersTest, FailureIsReportedOnceAfterEveryRankDrained) {
  CacheGeometry g = *PresetGeometry("tiny", 2, 8, 2);
  HostPlanes hp(g);
  auto gate = std::make_shared<std::latch>(1);
  std::atomic<int> batches{0};
  std::vector<std::unique_ptr<CopyEngine>> engines;
  engines.push_back(std::make_unique<GatedEngine>(gate, false, &batches));
  engines.push_back(std::make_unique<GatedEngine>(gate, true, &batches));
  auto t = *ThreadedTransfers::Create(g, {hp.planes(0), hp.planes(1)}, std::move(engines));
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 1);
  ASSERT_TRUE(
      t->Submit(Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0))).ok());
  EXPECT_FALSE(t->WaitForCompletion(50ms));  // both ranks are held at the gate
  gate->count_down();
  TransferCompletion c = WaitOne(*t);
  EXPECT_EQ(c.id, JobId(1));
  EXPECT_EQ(c.status.code(), StatusCode::kIoError);
  EXPECT_EQ(batches.load(), 2);  // the healthy rank finished before the report
}

TEST(ThreadedTransfersTest, ACompletionRaisesTheOwnersSignal) {
  CacheGeometry g = *PresetGeometry("tiny", 2, 8, 2);
  HostPlanes hp(g);
  auto gate = std::make_shared<std::latch>(1);
  std::atomic<int> batches{0};
  std::vector<std::unique_ptr<CopyEngine>> engines;
  engines.push_back(std::make_unique<GatedEngine>(gate, false, &batches));
  engines.push_back(std::make_unique<GatedEngine>(gate, false, &batches));
  auto t = *ThreadedTransfers::Create(g, {hp.planes(0), hp.planes(1)}, std::move(engines));
  auto signal = std::make_shared<WakeSignal>();
  t->NotifyOnCompletion(signal);
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 1);
  ASSERT_TRUE(
      t->Submit(Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0))).ok());
  gate->count_down();
  ASSERT_TRUE(signal->WaitFor(30s)) << "the completion never raised the signal";
  std::vector<TransferCompletion> done;
  t->Poll(done);
  ASSERT_EQ(done.size(), 1u);  // raised only once every rank finished
  EXPECT_EQ(done[0].id, JobId(1));
  EXPECT_TRUE(done[0].status.ok()) << done[0].status.ToString();
  EXPECT_EQ(batches.load(), 2);
  // Attached again while nothing waits: nothing is raised.
  t->NotifyOnCompletion(signal);
  EXPECT_FALSE(signal->WaitUntil(std::chrono::steady_clock::now()));
  ASSERT_TRUE(t->Close(10s).ok());
}

// A test double that leaves batches "in flight" and reports at Drain.
class DeferredEngine : public CopyEngine {
 public:
  DeferredEngine(std::atomic<int>* drains, bool fail_drain) : drains_(drains), fail_(fail_drain) {}
  Status Start() override { return Status::Ok(); }
  Status CopyBatch(TransferDirection, std::span<const CopyDescriptor>) override {
    ++in_flight_;
    return Status::Ok();
  }
  Status Drain() override {
    drains_->fetch_add(1);
    in_flight_ = 0;
    return fail_ ? Status::IoError("injected failure seen at drain") : Status::Ok();
  }
  uint64_t batches_in_flight() const override { return in_flight_; }
  void Stop() override {}

 private:
  std::atomic<int>* drains_;
  bool fail_;
  uint64_t in_flight_ = 0;
};

TEST(ThreadedTransfersTest, EveryJobDrainsItsEngineAndReportsWhatDrainFound) {
  CacheGeometry g = *PresetGeometry("tiny", 2, 8, 2);
  HostPlanes hp(g);
  std::atomic<int> drains{0};
  std::vector<std::unique_ptr<CopyEngine>> engines;
  engines.push_back(std::make_unique<DeferredEngine>(&drains, false));
  engines.push_back(std::make_unique<DeferredEngine>(&drains, true));
  auto t = *ThreadedTransfers::Create(g, {hp.planes(0), hp.planes(1)}, std::move(engines));
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 1);
  ASSERT_TRUE(
      t->Submit(Job(1, TransferDirection::kDeviceToHost, {PageId(0)}, s, StateSlot(0))).ok());
  TransferCompletion c = WaitOne(*t);
  EXPECT_EQ(c.status.code(), StatusCode::kIoError);
  EXPECT_EQ(drains.load(), 2);  // once per rank, before the completion
}

// A test double shaped like the CUDA engine with two batches in flight: a
// batch finishes when a later CopyBatch waits for it, or at Drain. The first
// CopyBatch waits at `gate` (so every job is queued before any is issued);
// `fail_batch` (1-based, 0: none) fails when it is waited for.
class TwoInFlightEngine : public CopyEngine {
 public:
  TwoInFlightEngine(std::shared_ptr<std::latch> gate, uint64_t fail_batch, std::atomic<int>* drains)
      : gate_(std::move(gate)), fail_batch_(fail_batch), drains_(drains) {}
  Status Start() override { return Status::Ok(); }
  Status CopyBatch(TransferDirection, std::span<const CopyDescriptor>) override {
    if (issued_ == 0) gate_->wait();
    if (issued_ - finished_ == 2) STRATA_RETURN_IF_ERROR(WaitOldest());
    ++issued_;
    return Status::Ok();
  }
  Status Drain() override {
    drains_->fetch_add(1);
    while (finished_ < issued_) STRATA_RETURN_IF_ERROR(WaitOldest());
    return Status::Ok();
  }
  uint64_t batches_in_flight() const override { return issued_ - finished_; }
  void Stop() override {}

 private:
  Status WaitOldest() {
    if (++finished_ != fail_batch_) return Status::Ok();
    finished_ = issued_;  // drained after the error
    return Status::IoError("injected failure of batch " + std::to_string(fail_batch_));
  }
  std::shared_ptr<std::latch> gate_;
  uint64_t fail_batch_;
  std::atomic<int>* drains_;
  uint64_t issued_ = 0;
  uint64_t finished_ = 0;
};

// Runs three one-batch jobs through one rank of TwoInFlightEngine; returns
// the completions in the order they came.
std::vector<TransferCompletion> RunThreeJobs(uint64_t fail_batch, std::atomic<int>* drains) {
  CacheGeometry g = *PresetGeometry("tiny", 1, 8, 2);
  HostPlanes hp(g);
  auto gate = std::make_shared<std::latch>(1);
  std::vector<std::unique_ptr<CopyEngine>> engines;
  engines.push_back(std::make_unique<TwoInFlightEngine>(gate, fail_batch, drains));
  auto t = *ThreadedTransfers::Create(g, {hp.planes(0)}, std::move(engines));
  RecordLayout layout(g);
  Slabs s = MakeSlabs(layout, 3);
  for (uint64_t id = 1; id <= 3; ++id) {
    TransferJob j = Job(id, TransferDirection::kDeviceToHost, {PageId(id)}, s, StateSlot(0));
    j.page_records = {s.pages[id - 1]};
    j.row_slot = std::nullopt;  // one batch per job
    EXPECT_TRUE(t->Submit(j).ok());
  }
  gate->count_down();
  std::vector<TransferCompletion> done;
  for (int i = 0; i < 300 && done.size() < 3; ++i) {
    t->WaitForCompletion(100ms);
    t->Poll(done);
  }
  EXPECT_EQ(done.size(), 3u);
  done.resize(3);
  EXPECT_TRUE(t->Close(10s).ok());
  return done;
}

TEST(ThreadedTransfersTest, QueuedJobsArePipelinedAndCompleteInOrderWithOneDrain) {
  std::atomic<int> drains{0};
  std::vector<TransferCompletion> done = RunThreeJobs(0, &drains);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(done[i].id, JobId(i + 1));
    EXPECT_TRUE(done[i].status.ok()) << done[i].status.ToString();
  }
  // Job 1 completed when job 3's batch waited for it; jobs 2 and 3 at the one
  // drain when the queue ran dry (not one drain per job).
  EXPECT_EQ(drains.load(), 1);
}

TEST(ThreadedTransfersTest, AFailedBatchFailsEveryJobThatWasInFlight) {
  std::atomic<int> drains{0};
  // Batch 1 (job 1's) fails when job 3's batch waits for it: jobs 1 to 3 were
  // all issued, the engine drained, and each fails with the error.
  std::vector<TransferCompletion> done = RunThreeJobs(1, &drains);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(done[i].id, JobId(i + 1));
    EXPECT_EQ(done[i].status.code(), StatusCode::kIoError) << i;
  }
}

TEST(ThreadedTransfersTest, EngineStartFailureFailsCreate) {
  CacheGeometry g = *PresetGeometry("tiny", 2, 8, 2);
  HostPlanes hp(g);
  std::vector<std::unique_ptr<CopyEngine>> engines;
  engines.push_back(std::make_unique<HostCopyEngine>());
  engines.push_back(std::make_unique<FailingStartEngine>());
  auto t = ThreadedTransfers::Create(g, {hp.planes(0), hp.planes(1)}, std::move(engines));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("starting rank 1"), std::string::npos);
}

}  // namespace
}  // namespace strata
