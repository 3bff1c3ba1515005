// DirectTransport over its CPU doubles (HostFileIo, HostRecordChecksums) and
// host planes: its files are the staged transport's (each reads what the
// other wrote, and with one clock both write identical bytes), a failed
// entry fails only its job, a corrupted page fails verification, and each
// store or fetch runs on the planes mapped when it was submitted (and, gated,
// holds the attach gate until reported).
#include "store/tier/direct_transport.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <mutex>
#include <set>

#include "launch/presets.h"
#include "store/record/fingerprint.h"
#include "store/tier/direct_transport_host_doubles.h"
#include "store/tier/gated_disk_transport.h"
#include "store/tier/local_disk.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::kClusterBound;

constexpr uint32_t kRanks = 2;
constexpr uint64_t kPageCount = 256;
// A store spanning two windows (kMaxWindowPages is 64).
constexpr uint32_t kPages = 70;
constexpr uint32_t kFetchBase = 100;  // destination ids of a fetch
const std::chrono::system_clock::time_point kFixedWall{std::chrono::seconds(1'700'000'000)};

CacheGeometry TwoRanks() {
  Result<CacheGeometry> g = PresetGeometry("tiny", kRanks, kPageCount, 8);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : CacheGeometry{};
}

// Planes that come and go, as an attached runtime's do: the test maps them.
class SwitchableBases final : public PlaneBaseSource {
 public:
  void Map(const HostPlanes& planes) {
    PlaneBases bases;
    for (uint32_t r = 0; r < planes.geometry().rank_count(); ++r) bases.push_back(planes.planes(r));
    std::lock_guard<std::mutex> lock(mu_);
    bases_ = std::make_shared<const PlaneBases>(std::move(bases));
  }
  void Unmap() {
    std::lock_guard<std::mutex> lock(mu_);
    bases_.reset();
  }
  std::shared_ptr<const PlaneBases> current_bases() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return bases_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const PlaneBases> bases_;
};

struct DirectRig {
  DirectRig() : geometry(TwoRanks()), planes(geometry) {
    LocalDiskOptions options;
    options.base_dir = dir.path();
    options.host_headroom_bytes = uint64_t{64} << 20;
    options.durability = Durability::kNone;
    const LayoutFingerprint fingerprint = ComputeLayoutFingerprint(geometry);
    Result<std::unique_ptr<LocalDisk>> opened =
        LocalDisk::Open(geometry, testing::TestIdentity(), fingerprint, options);
    if (!opened.ok()) {
      status = opened.status();
      return;
    }
    disk = std::move(*opened);
    Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(planes);
    EXPECT_TRUE(transfers.ok());
    StagedOptions staged_options;
    staged_options.clock.wall = [] { return kFixedWall; };
    Result<std::unique_ptr<StagedTransport>> made =
        disk->MakeTransport(std::move(*transfers), staged_options);
    if (!made.ok()) {
      status = made.status();
      return;
    }
    staged = std::move(*made);
    bases->Map(planes);
    auto file_io = std::make_unique<HostFileIo>(disk->fs());
    io = file_io.get();
    DirectOptions direct_options;
    direct_options.clock.wall = [] { return kFixedWall; };
    // Small batches: a store spans several.
    direct_options.batch = {.max_entries = 16, .max_bytes = uint64_t{64} << 10};
    // From the LocalDisk, as `strata rank` makes it: it shares the staged
    // side's row checksums.
    direct = disk->MakeDirectTransport(bases, std::move(file_io),
                                       std::make_unique<HostRecordChecksums>(), direct_options);
  }
  ~DirectRig() {
    if (direct) {
      EXPECT_TRUE(direct->Close(kClusterBound).ok());
    }
    if (staged) {
      EXPECT_TRUE(staged->Close(kClusterBound).ok());
    }
  }

  RecordJob Store(uint64_t id, uint8_t salt) const {
    RecordJob j;
    j.id = JobId(id);
    j.kind = RecordJobKind::kStore;
    j.key = testing::KeyOf(uint64_t{kPages} * geometry.page_tokens, salt);
    j.tail_pages = kPages;
    for (uint32_t p = 0; p < kPages; ++p) j.page_ids.emplace_back(p);
    j.row_slot = StateSlot(0);
    return j;
  }
  RecordJob Fetch(uint64_t id, uint8_t salt, uint32_t first_page) const {
    RecordJob j = Store(id, salt);
    j.kind = RecordJobKind::kFetch;
    j.first_page = first_page;
    j.page_ids.clear();
    for (uint32_t p = first_page; p < kPages; ++p) j.page_ids.emplace_back(kFetchBase + p);
    j.row_slot = StateSlot(1);
    return j;
  }

  // Distinct bytes in every source page and row 0; zeros at the destinations.
  void Fill() {
    for (uint32_t r = 0; r < kRanks; ++r) {
      for (uint32_t p = 0; p < geometry.ranks[r].page_planes.size(); ++p) {
        const uint64_t unit = geometry.ranks[r].page_planes[p].unit_bytes;
        for (uint32_t page = 0; page < kPageCount; ++page) {
          uint8_t* bytes = planes.page(r, p, PageId(page));
          for (uint64_t b = 0; b < unit; ++b) {
            bytes[b] = page < kFetchBase ? static_cast<uint8_t>(b * 7 + page * 13 + p * 3 + r) : 0;
          }
        }
      }
      const uint64_t row = geometry.ranks[r].row.unit_bytes;
      for (uint64_t b = 0; b < row; ++b) {
        planes.row(r, StateSlot(0))[b] = static_cast<uint8_t>(b * 5 + r + 1);
        planes.row(r, StateSlot(1))[b] = 0;
      }
    }
  }
  // Whether fetched pages [first, kPages) and row 1 equal the sources.
  ::testing::AssertionResult FetchedMatches(uint32_t first) {
    for (uint32_t r = 0; r < kRanks; ++r) {
      for (uint32_t p = 0; p < geometry.ranks[r].page_planes.size(); ++p) {
        const uint64_t unit = geometry.ranks[r].page_planes[p].unit_bytes;
        for (uint32_t page = first; page < kPages; ++page) {
          if (std::memcmp(planes.page(r, p, PageId(page)),
                          planes.page(r, p, PageId(kFetchBase + page)), unit) != 0) {
            return ::testing::AssertionFailure()
                   << "rank " << r << " plane " << p << " page " << page << " differs";
          }
        }
      }
      if (std::memcmp(planes.row(r, StateSlot(0)), planes.row(r, StateSlot(1)),
                      geometry.ranks[r].row.unit_bytes) != 0) {
        return ::testing::AssertionFailure() << "rank " << r << " row differs";
      }
    }
    return ::testing::AssertionSuccess();
  }

  // Submits `job` to `t` and waits (bounded) for its completion.
  static std::optional<RecordJobDone> Run(DiskTransport& t, const RecordJob& job) {
    Status s = t.Submit(job);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) return std::nullopt;
    const auto until = std::chrono::steady_clock::now() + kClusterBound;
    while (std::chrono::steady_clock::now() < until) {
      (void)t.WaitForCompletion(kClusterBound);
      std::vector<RecordJobDone> out;
      t.Poll(out);
      for (RecordJobDone& d : out) {
        if (d.id == job.id) return d;
      }
    }
    return std::nullopt;
  }
  std::string FilePath(const RecordJob& job) const {
    return disk->path() + "/" + RecordFileName(job.key);
  }
  std::string FileBytes(const RecordJob& job) const {
    std::ifstream in(FilePath(job), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  testing::ScratchDir dir;
  CacheGeometry geometry;
  HostPlanes planes;
  std::shared_ptr<SwitchableBases> bases = std::make_shared<SwitchableBases>();
  Status status;
  std::unique_ptr<LocalDisk> disk;
  std::unique_ptr<StagedTransport> staged;
  HostFileIo* io = nullptr;
  std::unique_ptr<DirectTransport> direct;
};

// Evaluates `expr` (an optional<RecordJobDone>) once.
#define EXPECT_DONE_OK(expr)                                               \
  do {                                                                     \
    const std::optional<RecordJobDone>& done_once_ = (expr);               \
    ASSERT_TRUE(done_once_.has_value());                                   \
    EXPECT_TRUE(done_once_->status.ok()) << done_once_->status.ToString(); \
  } while (0)

TEST(DirectTransportTest, StagedReadsWhatDirectWrote) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.Fill();
  std::optional<RecordJobDone> stored = DirectRig::Run(*rig.direct, rig.Store(1, 1));
  EXPECT_DONE_OK(stored);
  EXPECT_GT(stored->bytes, 0u);
  // No rescan between: the staged side knows the row checksum the direct
  // side wrote through the directory's one RowChecksums.
  std::optional<RecordJobDone> fetched = DirectRig::Run(*rig.staged, rig.Fetch(2, 1, 0));
  EXPECT_DONE_OK(fetched);
  EXPECT_TRUE(rig.FetchedMatches(0));
}

TEST(DirectTransportTest, DirectReadsWhatStagedWrote) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.Fill();
  EXPECT_DONE_OK(DirectRig::Run(*rig.staged, rig.Store(1, 2)));
  std::optional<RecordJobDone> fetched = DirectRig::Run(*rig.direct, rig.Fetch(2, 2, 3));
  EXPECT_DONE_OK(fetched);
  EXPECT_TRUE(rig.FetchedMatches(3));
  EXPECT_EQ(rig.direct->stats().checksum_failures, 0u);
}

TEST(DirectTransportTest, BothTransportsWriteIdenticalFiles) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.Fill();
  const RecordJob store = rig.Store(1, 3);
  EXPECT_DONE_OK(DirectRig::Run(*rig.staged, store));
  const std::string staged_bytes = rig.FileBytes(store);
  RecordJob unlink = store;
  unlink.id = JobId(2);
  unlink.kind = RecordJobKind::kUnlink;
  EXPECT_DONE_OK(DirectRig::Run(*rig.direct, unlink));
  RecordJob again = store;
  again.id = JobId(3);
  EXPECT_DONE_OK(DirectRig::Run(*rig.direct, again));
  const std::string direct_bytes = rig.FileBytes(store);
  ASSERT_FALSE(staged_bytes.empty());
  EXPECT_EQ(direct_bytes.size(), staged_bytes.size());
  EXPECT_TRUE(direct_bytes == staged_bytes) << "the files differ";
}

TEST(DirectTransportTest, AFailedEntryFailsItsJobAndTheNextJobRuns) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.Fill();
  rig.io->FailEntry(5, Status::IoError("injected entry failure"));
  const RecordJob failing = rig.Store(1, 4);
  std::optional<RecordJobDone> failed = DirectRig::Run(*rig.direct, failing);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->status.code(), StatusCode::kIoError) << failed->status.ToString();
  EXPECT_NE(failed->status.message().find("injected"), std::string::npos);
  EXPECT_FALSE(std::ifstream(rig.FilePath(failing)).good()) << "a failed write left its record";
  EXPECT_FALSE(std::ifstream(rig.FilePath(failing) + ".tmp").good()) << "temporary file left";
  EXPECT_DONE_OK(DirectRig::Run(*rig.direct, rig.Store(2, 5)));
  std::optional<RecordJobDone> fetched = DirectRig::Run(*rig.direct, rig.Fetch(3, 5, 0));
  EXPECT_DONE_OK(fetched);
  EXPECT_TRUE(rig.FetchedMatches(0));
  EXPECT_EQ(rig.direct->stats().jobs_failed, 1u);
  EXPECT_EQ(rig.direct->stats().jobs_done, 2u);
}

TEST(DirectTransportTest, ACorruptedPageFailsVerification) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.Fill();
  const RecordJob store = rig.Store(1, 6);
  EXPECT_DONE_OK(DirectRig::Run(*rig.direct, store));
  Result<RecordExtents> extents = ComputeExtents(
      DirectRecordHeader({testing::TestIdentity(), {}, ShapeOf(rig.geometry)}, store, 0, 0));
  ASSERT_TRUE(extents.ok());
  {
    std::fstream f(rig.FilePath(store), std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(extents->page_offset(7) + 10));
    f.put('\x5a');
  }
  std::optional<RecordJobDone> fetched = DirectRig::Run(*rig.direct, rig.Fetch(2, 6, 0));
  ASSERT_TRUE(fetched.has_value());
  EXPECT_EQ(fetched->status.code(), StatusCode::kCorruption) << fetched->status.ToString();
  EXPECT_NE(fetched->status.message().find("page 7 "), std::string::npos)
      << fetched->status.ToString();
  EXPECT_EQ(rig.direct->stats().checksum_failures, 1u);
}

TEST(DirectTransportTest, EachStoreAndFetchRunsOnThePlanesMappedWhenSubmitted) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.Fill();
  rig.bases->Unmap();
  EXPECT_EQ(rig.direct->Submit(rig.Store(1, 8)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(rig.direct->Submit(rig.Fetch(2, 8, 0)).code(), StatusCode::kUnavailable);
  RecordJob unlink = rig.Store(3, 8);  // touches no planes: still runs
  unlink.kind = RecordJobKind::kUnlink;
  EXPECT_TRUE(DirectRig::Run(*rig.direct, unlink).has_value());

  rig.bases->Map(rig.planes);
  EXPECT_DONE_OK(DirectRig::Run(*rig.direct, rig.Store(4, 8)));
  // A later attachment's planes elsewhere: the fetch lands there only.
  HostPlanes elsewhere(rig.geometry);
  rig.bases->Map(elsewhere);
  EXPECT_DONE_OK(DirectRig::Run(*rig.direct, rig.Fetch(5, 8, 0)));
  for (uint32_t r = 0; r < kRanks; ++r) {
    const uint64_t unit = rig.geometry.ranks[r].page_planes[0].unit_bytes;
    EXPECT_EQ(std::memcmp(rig.planes.page(r, 0, PageId(7)),
                          elsewhere.page(r, 0, PageId(kFetchBase + 7)), unit),
              0)
        << "rank " << r;
    const std::vector<uint8_t> zeros(unit, 0);
    EXPECT_EQ(std::memcmp(rig.planes.page(r, 0, PageId(kFetchBase + 7)), zeros.data(), unit), 0)
        << "rank " << r << ": the fetch wrote the planes mapped before it";
    EXPECT_EQ(std::memcmp(rig.planes.row(r, StateSlot(0)), elsewhere.row(r, StateSlot(1)),
                          rig.geometry.ranks[r].row.unit_bytes),
              0);
  }
}

// Over an attached runtime's planes the direct transport's stores and
// fetches count in the attach gate, so the planes stay mapped until Poll
// reported them.
TEST(DirectTransportTest, GatedStoresAndFetchesHoldTheAttachGateUntilPolled) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  rig.Fill();
  Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(rig.planes);
  ASSERT_TRUE(transfers.ok());
  GatedTransfers gate(std::move(*transfers));
  GatedDiskTransport gated(std::move(rig.direct), gate);

  EXPECT_EQ(gated.Submit(rig.Store(1, 9)).code(), StatusCode::kUnavailable);
  RecordJob unlink = rig.Store(2, 9);
  unlink.kind = RecordJobKind::kUnlink;
  EXPECT_TRUE(DirectRig::Run(gated, unlink).has_value());
  EXPECT_EQ(gate.in_flight(), 0u);

  gate.Open();
  ASSERT_TRUE(gated.Submit(rig.Store(3, 9)).ok());
  EXPECT_EQ(gate.in_flight(), 1u);  // finished or not, it holds the gate until polled
  EXPECT_EQ(gated.entered(), 1u);
  gate.Shut();  // a detach begins: the store already accepted still runs
  std::vector<RecordJobDone> done;
  const auto until = std::chrono::steady_clock::now() + kClusterBound;
  while (done.empty() && std::chrono::steady_clock::now() < until) {
    (void)gated.WaitForCompletion(kClusterBound);
    gated.Poll(done);
  }
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].status.ok()) << done[0].status.ToString();
  EXPECT_EQ(gate.in_flight(), 0u);
  EXPECT_EQ(gated.entered(), 0u);
  EXPECT_EQ(gated.Submit(rig.Fetch(4, 9, 0)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(gate.in_flight(), 0u);

  // A second job under an id in flight is refused, counted once.
  gate.Open();
  ASSERT_TRUE(gated.Submit(rig.Fetch(5, 9, 0)).ok());
  EXPECT_EQ(gated.Submit(rig.Fetch(5, 9, 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gate.in_flight(), 1u);
  // Close drains it: it leaves the gate there, and the next Poll reports it.
  EXPECT_TRUE(gated.Close(kClusterBound).ok());
  EXPECT_EQ(gate.in_flight(), 0u);
  EXPECT_EQ(gated.entered(), 0u);
  done.clear();
  gated.Poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, JobId(5));
  EXPECT_TRUE(done[0].status.ok()) << done[0].status.ToString();
}

TEST(DirectTransportTest, RefusesJobsOnceClosed) {
  DirectRig rig;
  STRATA_OK_OR_SKIP_DIRECT_IO(rig.status);
  EXPECT_FALSE(rig.direct->WaitForCompletion(std::chrono::milliseconds(0)));
  EXPECT_TRUE(rig.direct->Close(kClusterBound).ok());
  EXPECT_EQ(rig.direct->Submit(rig.Store(1, 7)).code(), StatusCode::kAborted);
}

// The pure planning: every rank's planes of every page and its row land at
// distinct file offsets inside the record, in batches within the bounds.
TEST(DirectTransportJobTest, PlanCoversEveryPlaneOfEveryRankOnce) {
  const CacheGeometry geometry = TwoRanks();
  const RecordLayout layout(geometry);
  std::vector<RankPlanes> planes;
  for (uint32_t r = 0; r < kRanks; ++r) {
    RankPlanes p;
    for (uint32_t k = 0; k < layout.plane_count(r); ++k) {
      p.page_plane_base.push_back((uint64_t{r} + 1) << 40 | uint64_t{k} << 32);
    }
    p.row_base = (uint64_t{r} + 1) << 40 | uint64_t{0xff} << 32;
    planes.push_back(p);
  }
  RecordJob job;
  job.kind = RecordJobKind::kFetch;
  job.key = testing::KeyOf(uint64_t{kPages} * geometry.page_tokens, 1);
  job.tail_pages = kPages;
  job.first_page = 2;
  for (uint32_t p = job.first_page; p < kPages; ++p) job.page_ids.emplace_back(p + 10);
  job.row_slot = StateSlot(3);
  Result<RecordExtents> extents = ComputeExtents(DirectRecordHeader(
      {testing::TestIdentity(), {}, ShapeOf(geometry)}, job, /*row_checksum=*/0, 0));
  ASSERT_TRUE(extents.ok());
  const DirectBatchBounds bounds{.max_entries = 16, .max_bytes = uint64_t{64} << 10};
  const auto batches =
      PlanDirectJob(layout, *extents, planes, job, TransferDirection::kHostToDevice, bounds);
  std::set<uint64_t> offsets;
  size_t entries = 0;
  for (const std::vector<DirectIoEntry>& b : batches) {
    ASSERT_LE(b.size(), bounds.max_entries);
    for (const DirectIoEntry& e : b) {
      ++entries;
      EXPECT_EQ(e.file_offset % kRecordAlign, 0u);
      EXPECT_GE(e.file_offset, extents->page_offset(job.first_page));
      EXPECT_LE(e.file_offset + e.bytes, extents->file_bytes_with_row());
      EXPECT_TRUE(offsets.insert(e.file_offset).second) << "offset " << e.file_offset << " twice";
    }
  }
  size_t planes_total = 0;
  for (uint32_t r = 0; r < kRanks; ++r) planes_total += layout.plane_count(r);
  EXPECT_EQ(entries, planes_total * job.page_ids.size() + kRanks);
}

TEST(DirectTransportJobTest, ChecksumPiecesFollowTheStoredLayout) {
  const CacheGeometry geometry = TwoRanks();
  const RecordLayout layout(geometry);
  std::vector<RankPlanes> planes(kRanks);
  for (uint32_t r = 0; r < kRanks; ++r) {
    for (uint32_t k = 0; k < layout.plane_count(r); ++k) {
      planes[r].page_plane_base.push_back(uint64_t{r + 1} << 40 | uint64_t{k} << 32);
    }
    planes[r].row_base = uint64_t{r + 1} << 40 | uint64_t{0xff} << 32;
  }
  const std::vector<PageId> ids = {PageId(4), PageId(9)};
  const auto per_rank = DirectChecksumRecords(layout, planes, ids, /*replicated_pages=*/false,
                                              StateSlot(2), /*replicated_row=*/false);
  ASSERT_EQ(per_rank.size(), ids.size() + 1);
  uint64_t stored = 0;
  for (const DeviceChecksumPiece& p : per_rank[1].pieces) stored += p.stored_bytes;
  EXPECT_EQ(stored, layout.page_record_bytes());
  EXPECT_EQ(per_rank[1].pieces[0].device,
            planes[0].page_plane_base[0] + 9 * layout.plane_bytes(0, 0));
  uint64_t row_stored = 0;
  for (const DeviceChecksumPiece& p : per_rank[2].pieces) row_stored += p.stored_bytes;
  EXPECT_EQ(row_stored, layout.row_segment_bytes());
  const auto replicated = DirectChecksumRecords(layout, planes, ids, /*replicated_pages=*/true,
                                                StateSlot(2), /*replicated_row=*/true);
  uint64_t share = 0;
  for (const DeviceChecksumPiece& p : replicated[0].pieces) share += p.stored_bytes;
  EXPECT_EQ(share, layout.replicated_page_record_bytes());
  EXPECT_EQ(replicated[2].pieces.size(), 1u);
}

}  // namespace
}  // namespace strata
