// StagedTransport's waits: the disk thread and the transfers raise one
// signal, so a completion from either wakes a waiter, also while the other
// source is busy.
#include "store/tier/staged_transport.h"

#include <gtest/gtest.h>

#include "store/record/fingerprint.h"
#include "store/tier/local_disk.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::FaultyTransfers;
using testing::kClusterBound;

struct StagedRig {
  StagedRig() : geometry(testing::RankGeometryOf()), planes(geometry) {
    LocalDiskOptions options;
    options.base_dir = dir.path();
    options.host_headroom_bytes = uint64_t{64} << 20;
    Result<std::unique_ptr<LocalDisk>> opened = LocalDisk::Open(
        geometry, testing::TestIdentity(), ComputeLayoutFingerprint(geometry), options);
    if (!opened.ok()) {
      status = opened.status();
      return;
    }
    disk = std::move(*opened);
    Result<std::unique_ptr<Transfers>> real = MakeHostTransfers(planes);
    EXPECT_TRUE(real.ok());
    auto faulty_owned = std::make_unique<FaultyTransfers>(std::move(*real));
    faulty = faulty_owned.get();
    Result<std::unique_ptr<StagedTransport>> made = disk->MakeTransport(std::move(faulty_owned));
    if (!made.ok()) {
      status = made.status();
      return;
    }
    staged = std::move(*made);
  }
  ~StagedRig() {
    if (staged) {
      EXPECT_TRUE(staged->Close(kClusterBound).ok());
    }
  }

  RecordJob Store(uint64_t id, uint32_t pages) const {
    RecordJob j;
    j.id = JobId(id);
    j.kind = RecordJobKind::kStore;
    j.key = testing::KeyOf(uint64_t{pages} * geometry.page_tokens, static_cast<uint8_t>(id));
    j.tail_pages = pages;
    for (uint32_t p = 0; p < pages; ++p) j.page_ids.emplace_back(p);
    j.row_slot = StateSlot(0);
    return j;
  }
  static RecordJob UnlinkMissing(uint64_t id) {
    RecordJob j;
    j.id = JobId(id);
    j.kind = RecordJobKind::kUnlink;
    j.key = testing::KeyOf(64, 0xee);  // never stored
    return j;
  }
  // Waits (bounded) through WaitForCompletion until job `id` is polled.
  std::optional<RecordJobDone> WaitFor(JobId id) {
    const auto until = std::chrono::steady_clock::now() + kClusterBound;
    while (std::chrono::steady_clock::now() < until) {
      (void)staged->WaitForCompletion(kClusterBound);
      std::vector<RecordJobDone> out;
      staged->Poll(out);
      for (RecordJobDone& d : out) {
        if (d.id == id) return d;
        others.push_back(std::move(d));
      }
    }
    return std::nullopt;
  }

  testing::ScratchDir dir;
  CacheGeometry geometry;
  HostPlanes planes;
  Status status;
  std::unique_ptr<LocalDisk> disk;
  FaultyTransfers* faulty = nullptr;
  std::unique_ptr<StagedTransport> staged;
  std::vector<RecordJobDone> others;  // completions polled while waiting for another
};

TEST(StagedTransportTest, ADiskCompletionWakesAWaitWhileACopyIsHeld) {
  StagedRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.faulty->set_mode(FaultyTransfers::Mode::kHoldCopyOut);
  ASSERT_TRUE(rig.staged->Submit(rig.Store(1, 4)).ok());
  ASSERT_TRUE(rig.faulty->WaitHeld());
  ASSERT_TRUE(rig.staged->Submit(StagedRig::UnlinkMissing(2)).ok());
  // The copy never ends on its own; the unlink's disk completion must wake
  // the wait and be reported while the store is still copying.
  std::optional<RecordJobDone> unlinked = rig.WaitFor(JobId(2));
  ASSERT_TRUE(unlinked.has_value()) << "the unlink never completed while a copy was held";
  EXPECT_TRUE(unlinked->status.ok()) << unlinked->status.ToString();
  EXPECT_TRUE(rig.others.empty()) << "the held store completed";
  rig.faulty->Release();
  std::optional<RecordJobDone> stored = rig.WaitFor(JobId(1));
  ASSERT_TRUE(stored.has_value());
  EXPECT_TRUE(stored->status.ok()) << stored->status.ToString();
}

TEST(StagedTransportTest, AnOwnersSignalIsRaisedByCopyAndDiskCompletions) {
  StagedRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  auto signal = std::make_shared<WakeSignal>();
  rig.staged->NotifyOnCompletion(signal);
  const RecordJob store = rig.Store(1, 4);
  ASSERT_TRUE(rig.staged->Submit(store).ok());
  // The owner sleeps on its signal alone (copy-out, then the write): every
  // wait must end raised, never at the bound, until the store is reported.
  constexpr int kWakeupsMax = 64;  // far more than a copy and a write need
  std::vector<RecordJobDone> out;
  for (int i = 0; i < kWakeupsMax && out.empty(); ++i) {
    ASSERT_TRUE(signal->WaitFor(kClusterBound)) << "the signal was never raised";
    rig.staged->Poll(out);
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, JobId(1));
  EXPECT_TRUE(out[0].status.ok()) << out[0].status.ToString();
  EXPECT_GT(out[0].bytes, 0u);
}

TEST(StagedTransportTest, ASignalAttachedWhileACompletionWaitsIsRaisedAtOnce) {
  StagedRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  ASSERT_TRUE(rig.staged->Submit(StagedRig::UnlinkMissing(1)).ok());
  ASSERT_TRUE(rig.staged->WaitForCompletion(kClusterBound));  // kept for the next Poll
  auto signal = std::make_shared<WakeSignal>();
  rig.staged->NotifyOnCompletion(signal);
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  std::vector<RecordJobDone> out;
  rig.staged->Poll(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, JobId(1));
}

}  // namespace
}  // namespace strata
