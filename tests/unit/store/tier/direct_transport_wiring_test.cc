// How `strata rank` picks and builds its disk transport (launch/rank/
// rank_transport.h, rank_disk_transport.h): the choice for every probe
// verdict x [prefix_cache] transport x test-only compatibility switch, and
// the transport built for each decision, through the direct transport's host
// doubles (store/tier/direct_transport_host_doubles.h) over host planes.
#include <gtest/gtest.h>

#include "cuda/cufile_table.h"
#include "launch/presets.h"
#include "launch/rank/rank_disk_transport.h"
#include "launch/rank/rank_transport.h"
#include "store/record/fingerprint.h"
#include "store/tier/direct_transport_host_doubles.h"
#include "store/tier/gated_disk_transport.h"
#include "store/transfer/host_planes.h"
#include "tests/support/record_jobs.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

constexpr std::chrono::seconds kBound{30};

enum class Verdict : unsigned char { kAccepted, kCompatOnly, kNoLibrary };

// What the probe found: an nvidia-fs host the table accepts; this project's
// GPU machine (libcufile, no nvidia-fs); a host without libcufile.
GdsFacts FactsFor(Verdict v) {
  GdsFacts f;
  f.planes_on_gpu = true;
  f.properties = CuFileProperties{.nvfs_major = 2,
                                  .nvfs_minor = 26,
                                  .max_direct_io_kib = 16384,
                                  .status_flags = 1U << kStrataCuFileNvme,
                                  .control_flags = 0,
                                  .feature_flags = 1U << kStrataCuFileBatchIo,
                                  .max_batch_io_entries = 128};
  f.nvidia_fs_loaded = true;
  f.filesystem = "xfs";
  f.peer_dma = PeerDma::kPermitted;
  if (v == Verdict::kCompatOnly) {
    f.nvidia_fs_loaded = false;
    f.properties->nvfs_major = 0;
  }
  if (v == Verdict::kNoLibrary) {
    f.library_error = "libcufile.so.0 not found";
    f.properties.reset();
  }
  return f;
}

struct ChoiceRow {
  Verdict verdict;
  TransportChoice choice;
  CompatMode compat;
  std::optional<TransportKind> kind;  // nullopt: startup fails
  const char* reason_contains;        // in the reason, or in the error
  bool probes;
};

constexpr auto kOff = CompatMode::kRefused;
constexpr auto kOn = CompatMode::kAllowedForTests;
constexpr auto kAuto = TransportChoice::kAuto;
constexpr auto kStaged = TransportChoice::kStaged;
constexpr auto kDirect = TransportChoice::kDirect;
const std::optional<TransportKind> kFails = std::nullopt;

const ChoiceRow kChoiceRows[] = {
    // transport = "staged" never probes, whatever the host and switch.
    {Verdict::kAccepted, kStaged, kOff, TransportKind::kStaged, "configured", false},
    {Verdict::kAccepted, kStaged, kOn, TransportKind::kStaged, "configured", false},
    {Verdict::kCompatOnly, kStaged, kOff, TransportKind::kStaged, "configured", false},
    {Verdict::kCompatOnly, kStaged, kOn, TransportKind::kStaged, "configured", false},
    {Verdict::kNoLibrary, kStaged, kOff, TransportKind::kStaged, "configured", false},
    {Verdict::kNoLibrary, kStaged, kOn, TransportKind::kStaged, "configured", false},
    // An accepting host runs the real direct path; the switch changes nothing.
    {Verdict::kAccepted, kAuto, kOff, TransportKind::kDirect, "nvidia-fs 2.26", true},
    {Verdict::kAccepted, kAuto, kOn, TransportKind::kDirect, "nvidia-fs 2.26", true},
    {Verdict::kAccepted, kDirect, kOff, TransportKind::kDirect, "nvidia-fs 2.26", true},
    {Verdict::kAccepted, kDirect, kOn, TransportKind::kDirect, "nvidia-fs 2.26", true},
    // No nvidia-fs: refused for serving, compatibility mode under the switch.
    {Verdict::kCompatOnly, kAuto, kOff, TransportKind::kStaged,
     "direct refused: no nvidia-fs kernel module", true},
    {Verdict::kCompatOnly, kAuto, kOn, TransportKind::kDirectCompat, "compatibility mode", true},
    {Verdict::kCompatOnly, kDirect, kOff, kFails, "no nvidia-fs kernel module", true},
    {Verdict::kCompatOnly, kDirect, kOn, TransportKind::kDirectCompat, "compatibility mode", true},
    // No libcufile: the switch allows compatibility mode and nothing else.
    {Verdict::kNoLibrary, kAuto, kOff, TransportKind::kStaged, "libcufile.so.0 not found", true},
    {Verdict::kNoLibrary, kAuto, kOn, TransportKind::kStaged, "libcufile.so.0 not found", true},
    {Verdict::kNoLibrary, kDirect, kOff, kFails, "libcufile.so.0 not found", true},
    {Verdict::kNoLibrary, kDirect, kOn, kFails, "libcufile.so.0 not found", true},
};

TEST(DirectTransportWiringTest, ChoiceForEveryVerdictConfigAndSwitch) {
  for (const ChoiceRow& row : kChoiceRows) {
    SCOPED_TRACE(std::string(TransportChoiceName(row.choice)) + " verdict " +
                 std::to_string(static_cast<int>(row.verdict)) + " switch " +
                 std::to_string(static_cast<int>(row.compat)));
    int probes = 0;
    Result<TransportDecision> d = DecideRankTransport(
        {.choice = row.choice, .disk = DiskTier::kPresent, .compat = row.compat}, [&] {
          ++probes;
          return FactsFor(row.verdict);
        });
    EXPECT_EQ(probes, row.probes ? 1 : 0);
    if (!row.kind) {
      ASSERT_FALSE(d.ok());
      EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
      EXPECT_NE(d.status().message().find("transport = \"direct\" refused"), std::string::npos);
      EXPECT_NE(d.status().message().find(row.reason_contains), std::string::npos)
          << d.status().ToString();
      continue;
    }
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->kind, *row.kind);
    EXPECT_NE(d->reason.find(row.reason_contains), std::string::npos) << d->reason;
  }
}

TEST(DirectTransportWiringTest, NoDiskTierIsStagedWithoutProbing) {
  int probes = 0;
  Result<TransportDecision> d =
      DecideRankTransport({.choice = kDirect, .disk = DiskTier::kAbsent, .compat = kOn}, [&] {
        ++probes;
        return FactsFor(Verdict::kAccepted);
      });
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, TransportKind::kStaged);
  EXPECT_EQ(probes, 0);
}

// cuFile's compatibility batch path polls (about 5.4 ms per entry on the
// H200), so compatibility mode runs one synchronous call per entry, and the
// startup line says so; the real direct path stays batched.
TEST(DirectTransportWiringTest, CompatibilityModeRunsSynchronousCuFileCalls) {
  EXPECT_EQ(CuFileIoModeFor(TransportKind::kDirectCompat), CuFileIoMode::kSynchronous);
  EXPECT_EQ(CuFileIoModeFor(TransportKind::kDirect), CuFileIoMode::kBatch);
  Result<TransportDecision> compat =
      DecideRankTransport({.choice = kDirect, .disk = DiskTier::kPresent, .compat = kOn},
                          [] { return FactsFor(Verdict::kCompatOnly); });
  ASSERT_TRUE(compat.ok()) << compat.status().ToString();
  EXPECT_NE(compat->reason.find("synchronous cuFileRead/cuFileWrite"), std::string::npos)
      << compat->reason;
  EXPECT_NE(TransportSummary(*compat).find("synchronous cuFileRead/cuFileWrite"),
            std::string::npos);
  Result<TransportDecision> direct =
      DecideRankTransport({.choice = kDirect, .disk = DiskTier::kPresent, .compat = kOn},
                          [] { return FactsFor(Verdict::kAccepted); });
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->reason.find("synchronous"), std::string::npos) << direct->reason;
}

TEST(DirectTransportWiringTest, TheSwitchIsOnOnlyForOne) {
  EXPECT_EQ(TestCompatModeFrom("1"), CompatMode::kAllowedForTests);
  EXPECT_EQ(TestCompatModeFrom(nullptr), CompatMode::kRefused);
  EXPECT_EQ(TestCompatModeFrom("0"), CompatMode::kRefused);
  EXPECT_EQ(TestCompatModeFrom("true"), CompatMode::kRefused);
  EXPECT_EQ(TestCompatModeFrom(""), CompatMode::kRefused);
}

// A record directory and host planes of one rank, with a transport built by
// OpenRankDiskTransport.
struct WiringRig {
  WiringRig() : geometry(*PresetGeometry("tiny", 1, 64, 4)), planes(geometry) {
    LocalDiskOptions options;
    options.base_dir = dir.path();
    options.host_headroom_bytes = uint64_t{64} << 20;
    options.durability = Durability::kNone;
    Result<std::unique_ptr<LocalDisk>> opened = LocalDisk::Open(
        geometry, testing::TestIdentity(), ComputeLayoutFingerprint(geometry), options);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (opened.ok()) disk = std::move(*opened);
  }
  Result<std::unique_ptr<DiskTransport>> Open(TransportKind kind) {
    Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(planes);
    if (!transfers.ok()) return transfers.status();
    return OpenRankDiskTransport({.kind = kind, .reason = "test"}, *disk, planes,
                                 std::move(*transfers), [this](const DevicePlanes&) {
                                   ++seams_made;
                                   return Result<DirectSeams>(DirectSeams{
                                       .io = std::make_unique<HostFileIo>(disk->fs()),
                                       .checksums = std::make_unique<HostRecordChecksums>(),
                                       .keep_alive = {}});
                                 });
  }
  // Job 1 stores pages 0-1 and row 0 under a key of `salt`.
  RecordJob StoreJob(uint8_t salt) const {
    RecordJob store;
    store.id = JobId(1);
    store.key = testing::KeyOf(uint64_t{2} * geometry.page_tokens, salt);
    store.tail_pages = 2;
    store.page_ids = {PageId(0), PageId(1)};
    store.row_slot = StateSlot(0);
    return store;
  }
  // Job 2 fetches `store`'s record into pages 10-11 and row 1.
  static RecordJob FetchOf(const RecordJob& store) {
    RecordJob fetch = store;
    fetch.id = JobId(2);
    fetch.kind = RecordJobKind::kFetch;
    fetch.page_ids = {PageId(10), PageId(11)};
    fetch.row_slot = StateSlot(1);
    return fetch;
  }

  testing::ScratchDir dir;
  CacheGeometry geometry;
  HostPlanes planes;
  std::unique_ptr<LocalDisk> disk;
  int seams_made = 0;
};

Status RunJob(DiskTransport& t, const RecordJob& job) { return test::RunRecordJob(t, job, kBound); }

TEST(DirectTransportWiringTest, StagedDecisionBuildsTheStagedTransportWithoutSeams) {
  WiringRig rig;
  ASSERT_NE(rig.disk, nullptr);
  Result<std::unique_ptr<DiskTransport>> t = rig.Open(TransportKind::kStaged);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_NE(dynamic_cast<StagedTransport*>(t->get()), nullptr);
  EXPECT_EQ(rig.seams_made, 0);
  EXPECT_TRUE((*t)->Close(kBound).ok());
}

TEST(DirectTransportWiringTest, DirectDecisionRunsDeviceJobsOnTheDirectSide) {
  for (TransportKind kind : {TransportKind::kDirect, TransportKind::kDirectCompat}) {
    WiringRig rig;
    ASSERT_NE(rig.disk, nullptr);
    const std::vector<uint8_t> page(rig.geometry.ranks[0].page_planes[0].unit_bytes, 0x5a);
    ASSERT_TRUE(rig.planes.WritePage(0, 0, PageId(1), page).ok());
    Result<std::unique_ptr<DiskTransport>> t = rig.Open(kind);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto* split = dynamic_cast<SplitDiskTransport*>(t->get());
    ASSERT_NE(split, nullptr);
    EXPECT_EQ(rig.seams_made, 1);
    const RecordJob store = rig.StoreJob(1);
    ASSERT_TRUE(RunJob(*split, store).ok());
    const RecordJob fetch = WiringRig::FetchOf(store);
    ASSERT_TRUE(RunJob(*split, fetch).ok());
    std::vector<uint8_t> back(page.size());
    ASSERT_TRUE(rig.planes.ReadPage(0, 0, PageId(11), back).ok());
    EXPECT_EQ(back, page);
    EXPECT_EQ(split->direct_stats().jobs_done, 2u);
    EXPECT_EQ(split->staged_stats().jobs_done, 0u);
    EXPECT_TRUE(split->Close(kBound).ok());
  }
}

TEST(DirectTransportWiringTest, SeamsThatCannotBeMadeFailTheOpenNamingWhy) {
  WiringRig rig;
  ASSERT_NE(rig.disk, nullptr);
  Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(rig.planes);
  ASSERT_TRUE(transfers.ok());
  Result<std::unique_ptr<DiskTransport>> t = OpenRankDiskTransport(
      {.kind = TransportKind::kDirectCompat, .reason = "test"}, *rig.disk, rig.planes,
      std::move(*transfers), [](const DevicePlanes&) -> Result<DirectSeams> {
        return Status::FailedPrecondition("no GPU here");
      });
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("direct transport"), std::string::npos);
  EXPECT_NE(t.status().message().find("no GPU here"), std::string::npos);
}

// A rank whose planes are an attached runtime's: the direct side runs on
// the planes the source maps, behind the attach gate.
TEST(DirectTransportWiringTest, AttachedPlanesRunDirectBehindTheAttachGate) {
  WiringRig rig;
  ASSERT_NE(rig.disk, nullptr);
  const std::vector<uint8_t> page(rig.geometry.ranks[0].page_planes[0].unit_bytes, 0x6b);
  ASSERT_TRUE(rig.planes.WritePage(0, 0, PageId(1), page).ok());
  Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(rig.planes);
  ASSERT_TRUE(transfers.ok());
  auto gated = std::make_unique<GatedTransfers>(std::move(*transfers));
  GatedTransfers& gate = *gated;
  auto bases = std::make_shared<FixedPlaneBases>(PlaneBases{rig.planes.planes(0)});
  int seams_made = 0;
  Result<std::unique_ptr<DiskTransport>> t = OpenAttachedDiskTransport(
      {.kind = TransportKind::kDirectCompat, .reason = "test"}, *rig.disk, bases, std::move(gated),
      StagedOptions{}, gate, [&]() -> Result<DirectSeams> {
        ++seams_made;
        return DirectSeams{.io = std::make_unique<HostFileIo>(rig.disk->fs()),
                           .checksums = std::make_unique<HostRecordChecksums>(),
                           .keep_alive = {}};
      });
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(seams_made, 1);
  ASSERT_NE(dynamic_cast<GatedDiskTransport*>(t->get()), nullptr);
  const RecordJob store = rig.StoreJob(2);
  EXPECT_EQ((*t)->Submit(store).code(), StatusCode::kUnavailable);  // no runtime attached
  gate.Open();
  ASSERT_TRUE(RunJob(**t, store).ok());
  const RecordJob fetch = WiringRig::FetchOf(store);
  ASSERT_TRUE(RunJob(**t, fetch).ok());
  std::vector<uint8_t> back(page.size());
  ASSERT_TRUE(rig.planes.ReadPage(0, 0, PageId(11), back).ok());
  EXPECT_EQ(back, page);
  EXPECT_EQ(gate.in_flight(), 0u);
  EXPECT_TRUE((*t)->Close(kBound).ok());
}

TEST(DirectTransportWiringTest, AttachedStagedDecisionOrHostPlanesNeedNoSeams) {
  int seams_made = 0;
  auto seams = [&]() -> Result<DirectSeams> {
    ++seams_made;
    return Status::Internal("not reached");
  };
  for (TransportKind kind : {TransportKind::kStaged, TransportKind::kDirect}) {
    WiringRig rig;
    ASSERT_NE(rig.disk, nullptr);
    Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(rig.planes);
    ASSERT_TRUE(transfers.ok());
    auto gated = std::make_unique<GatedTransfers>(std::move(*transfers));
    GatedTransfers& gate = *gated;
    // Host planes: no bases for the direct side.
    Result<std::unique_ptr<DiskTransport>> t =
        OpenAttachedDiskTransport({.kind = kind, .reason = "test"}, *rig.disk, nullptr,
                                  std::move(gated), StagedOptions{}, gate, seams);
    if (kind == TransportKind::kStaged) {
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      EXPECT_NE(dynamic_cast<StagedTransport*>(t->get()), nullptr);
      EXPECT_TRUE((*t)->Close(kBound).ok());
    } else {
      ASSERT_FALSE(t.ok());
      EXPECT_NE(t.status().message().find("GPU memory"), std::string::npos)
          << t.status().ToString();
    }
  }
  EXPECT_EQ(seams_made, 0);
}

TEST(DirectTransportWiringTest, CuFileSeamsRefuseHostPlanes) {
  WiringRig rig;
  Result<DirectSeams> seams = CuFileSeams(nullptr, CuFileIoMode::kBatch)(rig.planes);
  ASSERT_FALSE(seams.ok());
  EXPECT_EQ(seams.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace strata
