// The staged store's fused checksums (issue 18): the copy-out hashes each
// staging page while it is in cache and the disk thread writes those sums.
// A record written that way is byte-identical to one whose sums the disk
// thread computed, and a page damaged on disk still fails the fetch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "store/record/fingerprint.h"
#include "store/record/record_file.h"
#include "store/tier/local_disk.h"
#include "store/tier/staged_transport.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"
#include "tests/unit/store/tier/disk_store_test_support.h"
#include "tests/unit/store/tier/fake_store_clock.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using testing::kClusterBound;

// Passes jobs to the real transfers and counts the completions that carry
// record checksums; kStrip drops them, so the disk thread hashes (the path
// before issue 18).
class SumsSpy final : public Transfers {
 public:
  enum class Mode : unsigned char { kPass, kStrip };
  SumsSpy(std::unique_ptr<Transfers> real, Mode mode) : real_(std::move(real)), mode_(mode) {}

  Status Submit(TransferJob job) override { return real_->Submit(std::move(job)); }
  void Poll(std::vector<TransferCompletion>& out) override {
    const size_t from = out.size();
    real_->Poll(out);
    for (size_t i = from; i < out.size(); ++i) {
      if (out[i].page_sums.empty() && !out[i].row_sum) continue;
      ++hashed_;
      if (mode_ == Mode::kStrip) {
        out[i].page_sums.clear();
        out[i].row_sum.reset();
      }
    }
  }
  bool WaitForCompletion(std::chrono::milliseconds timeout) override {
    return real_->WaitForCompletion(timeout);
  }
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override {
    real_->NotifyOnCompletion(std::move(signal));
  }
  Status Close(std::chrono::milliseconds deadline) override { return real_->Close(deadline); }
  uint32_t rank_count() const override { return real_->rank_count(); }

  // Owner thread only (Poll's).
  uint64_t hashed() const { return hashed_; }

 private:
  std::unique_ptr<Transfers> real_;
  Mode mode_;
  uint64_t hashed_ = 0;
};

// Fills every page and row of `planes` (one rank) with bytes that differ by
// page, plane and offset.
void FillPlanes(HostPlanes& planes) {
  const RankGeometry& g = planes.geometry().ranks[0];
  for (uint32_t p = 0; p < g.page_planes.size(); ++p) {
    for (uint64_t id = 0; id < g.page_count; ++id) {
      uint8_t* page = planes.page(0, p, PageId(id));
      for (uint64_t b = 0; b < g.page_planes[p].unit_bytes; ++b) {
        page[b] = static_cast<uint8_t>(b * 7 + id * 13 + p * 31 + 1);
      }
    }
  }
  for (uint64_t s = 0; s < g.row_count; ++s) {
    uint8_t* row = planes.row(0, StateSlot(s));
    for (uint64_t b = 0; b < g.row.unit_bytes; ++b) row[b] = static_cast<uint8_t>(b * 3 + s + 5);
  }
}

struct FusedRig {
  FusedRig(HostPlanes& planes, SumsSpy::Mode mode) : geometry(planes.geometry()) {
    clock.SetWall(std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)));
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
    auto spy_owned = std::make_unique<SumsSpy>(std::move(*real), mode);
    spy = spy_owned.get();
    StagedOptions staged_options;
    staged_options.clock = clock.clock();
    Result<std::unique_ptr<StagedTransport>> made =
        disk->MakeTransport(std::move(spy_owned), staged_options);
    if (!made.ok()) {
      status = made.status();
      return;
    }
    staged = std::move(*made);
  }
  ~FusedRig() {
    if (staged) {
      EXPECT_TRUE(staged->Close(kClusterBound).ok());
    }
  }

  RecordJob Store(uint32_t pages) const {
    RecordJob j;
    j.id = JobId(next_id);
    j.kind = RecordJobKind::kStore;
    j.key = testing::KeyOf(uint64_t{pages} * geometry.page_tokens, 0x42);
    j.tail_pages = pages;
    for (uint32_t p = 0; p < pages; ++p) j.page_ids.emplace_back(p);
    j.row_slot = StateSlot(0);
    return j;
  }
  RecordJob Fetch(const RecordJob& stored, uint64_t id) const {
    RecordJob j = stored;
    j.id = JobId(id);
    j.kind = RecordJobKind::kFetch;
    j.page_ids.clear();
    for (uint32_t p = 0; p < stored.tail_pages; ++p) j.page_ids.emplace_back(100 + p);
    j.row_slot = StateSlot(1);
    return j;
  }
  // Submits `job` and waits (bounded) for its completion.
  Status Run(const RecordJob& job) {
    Status s = staged->Submit(job);
    if (!s.ok()) return s;
    const auto until = std::chrono::steady_clock::now() + kClusterBound;
    while (std::chrono::steady_clock::now() < until) {
      (void)staged->WaitForCompletion(kClusterBound);
      std::vector<RecordJobDone> out;
      staged->Poll(out);
      for (RecordJobDone& d : out) {
        if (d.id == job.id) return d.status;
      }
    }
    return Status::Aborted("job never completed");
  }
  std::string PathOf(const RecordJob& job) const {
    return disk->path() + "/" + RecordFileName(job.key);
  }

  testing::ScratchDir dir;
  testing::FakeStoreClock clock;
  CacheGeometry geometry;
  Status status;
  std::unique_ptr<LocalDisk> disk;
  SumsSpy* spy = nullptr;
  std::unique_ptr<StagedTransport> staged;
  uint64_t next_id = 1;
};

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

constexpr uint32_t kPages = 5;

TEST(StagedFusedChecksumTest, ARecordHashedDuringTheCopyIsByteIdenticalToOneHashedByTheDiskThread) {
  HostPlanes planes(testing::RankGeometryOf());
  FillPlanes(planes);
  FusedRig fused(planes, SumsSpy::Mode::kPass);
  STRATA_OK_OR_SKIP_DIRECT_IO(fused.status);
  FusedRig plain(planes, SumsSpy::Mode::kStrip);
  ASSERT_TRUE(plain.status.ok()) << plain.status.ToString();

  const RecordJob store = fused.Store(kPages);
  ASSERT_TRUE(fused.Run(store).ok());
  ASSERT_TRUE(plain.Run(store).ok());
  EXPECT_GT(fused.spy->hashed(), 0u) << "the copy-out did not hash: the fused path was not taken";
  EXPECT_GT(plain.spy->hashed(), 0u) << "nothing was stripped: the old path was not exercised";

  const std::vector<char> a = ReadFile(fused.PathOf(store));
  const std::vector<char> b = ReadFile(plain.PathOf(store));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "records differ between the fused and the disk-thread checksums";
}

TEST(StagedFusedChecksumTest, APageDamagedOnDiskAfterAFusedWriteFailsTheFetch) {
  HostPlanes planes(testing::RankGeometryOf());
  FillPlanes(planes);
  FusedRig rig(planes, SumsSpy::Mode::kPass);
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  const RecordJob store = rig.Store(kPages);
  ASSERT_TRUE(rig.Run(store).ok());
  ASSERT_GT(rig.spy->hashed(), 0u) << "the fused path was not taken";

  // The sums the copy computed verify the intact file.
  Status intact = rig.Run(rig.Fetch(store, 2));
  ASSERT_TRUE(intact.ok()) << intact.ToString();

  testing::DamagePage(rig.PathOf(store), 3);
  Status damaged = rig.Run(rig.Fetch(store, 3));
  EXPECT_EQ(damaged.code(), StatusCode::kCorruption) << damaged.ToString();
  EXPECT_THAT(damaged.message(), HasSubstr("page 3 of 5 failed its checksum"));
}

}  // namespace
}  // namespace strata
