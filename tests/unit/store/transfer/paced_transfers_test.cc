// Host transfers under a copy bound (ThreadedTransfersOptions'
// copy_out_bytes_per_s / restore_bytes_per_s, store/transfer/transfer_pacer.h).
#include <gtest/gtest.h>

#include <chrono>

#include "launch/presets.h"
#include "store/transfer/host_planes.h"
#include "store/transfer/threaded_transfers.h"
#include "tests/unit/store/transfer/host_transfers_test_support.h"

namespace strata {
namespace {

using namespace transfers_test;

// A bounded restore rate holds the restore back (transfer_pacer.h) and moves
// the same bytes. Only a lower bound on the time is checked: a slower machine
// only takes longer.
TEST(HostTransfersTest, APacedRestoreTakesAtLeastItsBookedTimeAndIsByteExact) {
  CacheGeometry g = *PresetGeometry("qwen-like", 1, /*pages=*/70, /*rows=*/2);
  HostPlanes hp(g);
  ThreadedTransfersOptions o;
  constexpr uint64_t kRate = 32ull << 20;  // 32 MiB/s
  o.restore_bytes_per_s = kRate;
  auto t = *MakeHostTransfers(hp, o);
  RecordLayout layout(g);
  const size_t n = 64;
  std::vector<PageId> ids;
  for (uint32_t i = 0; i < n; ++i) ids.push_back(PageId(i));
  Fill(hp, ids, StateSlot(0), 3);
  Slabs s = MakeSlabs(layout, n);
  ASSERT_TRUE(t->Submit(Job(1, TransferDirection::kDeviceToHost, ids, s, StateSlot(0))).ok());
  ASSERT_TRUE(WaitOne(*t).status.ok());
  Poison(hp);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(t->Submit(Job(2, TransferDirection::kHostToDevice, ids, s, StateSlot(1))).ok());
  TransferCompletion in = WaitOne(*t);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(in.status.ok()) << in.status.ToString();
  // The last batch starts once every byte before it is booked, less the
  // burst of one batch: so all but two batches' bytes wait for the rate.
  const double booked = static_cast<double>(in.bytes - 2 * kMaxBatchBytes) / kRate;
  ASSERT_GT(booked, 0.1);
  EXPECT_GE(seconds, booked * 0.99) << in.bytes << " bytes";
  EXPECT_EQ(Check(hp, ids, StateSlot(1), 3), "");
  ASSERT_TRUE(t->Close(10s).ok());
}

// Close lifts the bound: a restore of about 40 MiB at 256 KiB/s, which would
// wait some 30 s past its first two batches, drains within Close's deadline.
TEST(HostTransfersTest, CloseDrainsAPacedJobAtFullRate) {
  CacheGeometry g = *PresetGeometry("qwen-like", 1, /*pages=*/70, /*rows=*/2);
  HostPlanes hp(g);
  ThreadedTransfersOptions o;
  o.restore_bytes_per_s = 256ull << 10;
  auto t = *MakeHostTransfers(hp, o);
  RecordLayout layout(g);
  std::vector<PageId> ids;
  for (uint32_t i = 0; i < 64; ++i) ids.push_back(PageId(i));
  Slabs s = MakeSlabs(layout, ids.size());
  ASSERT_TRUE(t->Submit(Job(1, TransferDirection::kHostToDevice, ids, s, StateSlot(1))).ok());
  EXPECT_TRUE(t->Close(20s).ok());
  std::vector<TransferCompletion> done;
  t->Poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].status.ok()) << done[0].status.ToString();
}

}  // namespace
}  // namespace strata
