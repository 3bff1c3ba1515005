// CuFileDirectIo's registrations (cuda/cufile_io.h) against the fake cuFile
// library (tests/fake_cufile), which refuses a second registration of a
// registered pointer with 5023 as the real driver does: a Create that fails
// halfway deregisters what it registered, and a direct transport whose Close
// timed out (its owner then leaks it on purpose, as DiskFiles::Close does)
// releases the registrations once its running job ends, without running the
// jobs still queued, so the next Create over the same planes succeeds.
#include "cuda/cufile_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "launch/presets.h"
#include "launch/rank/rank_disk_transport.h"
#include "store/base/deliberate_leak.h"
#include "store/record/fingerprint.h"
#include "store/tier/direct_transport_host_doubles.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/cuda/fake_cuda.h"
#include "tests/unit/cuda/fake_cufile.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

// Three device ranges of the fake CUDA driver's context.
struct IoRig {
  explicit IoRig(const FakeCuda& cuda) {
    Result<std::unique_ptr<PrimaryContext>> retained = PrimaryContext::Retain(cuda.driver(), 0);
    EXPECT_TRUE(retained.ok()) << retained.status().ToString();
    if (retained.ok()) context = std::move(*retained);
  }
  Result<std::unique_ptr<CuFileDirectIo>> Create() const {
    return CuFileDirectIo::Create(cufile.library(), context, buffers);
  }
  FakeCuFile cufile;
  std::shared_ptr<const PrimaryContext> context;
  std::vector<CuFileBuffer> buffers = {{0x10000, 4096}, {0x20000, 4096}, {0x30000, 4096}};
};

#define STRATA_USE_IO_RIG(rig)              \
  STRATA_USE_FAKE_CUDA(cuda);               \
  IoRig rig(cuda);                          \
  ASSERT_NE(rig.cufile.library(), nullptr); \
  ASSERT_NE(rig.context, nullptr)

TEST(CuFileDirectIoTest, TheFakeRefusesASecondRegistrationLikeTheDriver) {
  STRATA_USE_IO_RIG(rig);
  Result<std::unique_ptr<CuFileDirectIo>> first = rig.Create();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(rig.cufile.Registered(), 3u);
  Result<std::unique_ptr<CuFileDirectIo>> second = rig.Create();
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("5023"), std::string::npos)
      << second.status().ToString();
  EXPECT_EQ(rig.cufile.Registered(), 3u);  // the refused Create took none of the first's
  first->reset();
  EXPECT_EQ(rig.cufile.Registered(), 0u);
  EXPECT_TRUE(rig.Create().ok());
}

// An attached runtime's planes: registered when mapped, deregistered
// before unmapped, each attachment anew.
TEST(CuFileDirectIoTest, PlanesThatComeAndGoAreRegisteredPerAttachment) {
  STRATA_USE_IO_RIG(rig);
  Result<std::unique_ptr<CuFileDirectIo>> io =
      CuFileDirectIo::Create(rig.cufile.library(), rig.context, {});
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  EXPECT_EQ(rig.cufile.Registered(), 0u);
  ASSERT_TRUE((*io)->Register(rig.buffers).ok());
  EXPECT_EQ(rig.cufile.Registered(), 3u);
  EXPECT_EQ((*io)->registered(), 3u);
  // Registered twice without a release: the driver refuses; nothing changes.
  Status again = (*io)->Register(rig.buffers);
  EXPECT_NE(again.message().find("5023"), std::string::npos) << again.ToString();
  EXPECT_EQ(rig.cufile.Registered(), 3u);
  EXPECT_EQ((*io)->registered(), 3u);
  (*io)->DeregisterAll();
  EXPECT_EQ(rig.cufile.Registered(), 0u);
  // A refusal halfway through undoes this call's registrations only.
  rig.cufile.FailRegister(2);
  EXPECT_FALSE((*io)->Register(rig.buffers).ok());
  EXPECT_EQ(rig.cufile.Registered(), 0u);
  EXPECT_EQ((*io)->registered(), 0u);
  ASSERT_TRUE((*io)->Register(rig.buffers).ok());
  io->reset();
  EXPECT_EQ(rig.cufile.Registered(), 0u) << "the last owner deregisters what is left";
}

TEST(CuFileDirectIoTest, AFailedRegistrationDeregistersTheOnesBeforeIt) {
  STRATA_USE_IO_RIG(rig);
  rig.cufile.FailRegister(3);
  Result<std::unique_ptr<CuFileDirectIo>> failed = rig.Create();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("register 4096 device bytes"), std::string::npos)
      << failed.status().ToString();
  EXPECT_EQ(rig.cufile.Registered(), 0u);
  Result<std::unique_ptr<CuFileDirectIo>> again = rig.Create();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(rig.cufile.Registered(), 3u);
}

// A direct transport as `strata rank` opens it (OpenRankDiskTransport), its
// DirectFileIo a CuFileDirectIo over the fake registering the host planes.
TEST(CuFileDirectIoTest, ATransportWhoseCloseTimedOutReleasesItsRegistrations) {
  STRATA_USE_IO_RIG(rig);
  const CacheGeometry geometry = *PresetGeometry("tiny", 1, 16, 2);
  HostPlanes planes(geometry);
  testing::ScratchDir dir;
  LocalDiskOptions options;
  options.base_dir = dir.path();
  options.durability = Durability::kNone;
  Result<std::unique_ptr<LocalDisk>> disk = LocalDisk::Open(
      geometry, testing::TestIdentity(), ComputeLayoutFingerprint(geometry), options);
  ASSERT_TRUE(disk.ok()) << disk.status().ToString();
  std::vector<CuFileBuffer> buffers;
  const RankPlanes p = planes.planes(0);
  for (size_t k = 0; k < p.page_plane_base.size(); ++k) {
    buffers.push_back({p.page_plane_base[k], geometry.ranks[0].page_planes[k].unit_bytes * 16});
  }
  auto seams = [&](const DevicePlanes&) -> Result<DirectSeams> {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CuFileDirectIo> io,
                            CuFileDirectIo::Create(rig.cufile.library(), rig.context, buffers));
    return DirectSeams{.io = std::move(io),
                       .checksums = std::make_unique<HostRecordChecksums>(),
                       .keep_alive = {}};
  };
  Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(planes);
  ASSERT_TRUE(transfers.ok());
  Result<std::unique_ptr<DiskTransport>> t =
      OpenRankDiskTransport({.kind = TransportKind::kDirectCompat, .reason = "test"}, **disk,
                            planes, std::move(*transfers), seams);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(rig.cufile.Registered(), buffers.size());

  rig.cufile.Hold(true);  // the first store's batch stays in flight
  for (uint64_t id : {1, 2}) {
    RecordJob store;
    store.id = JobId(id);
    store.key = testing::KeyOf(geometry.page_tokens, static_cast<uint8_t>(id));
    store.tail_pages = 1;
    store.page_ids = {PageId(id)};
    store.row_slot = StateSlot(0);
    ASSERT_TRUE((*t)->Submit(store).ok());
  }
  ASSERT_TRUE(rig.cufile.WaitHeld());
  EXPECT_FALSE((*t)->Close(std::chrono::milliseconds(1)).ok());
  // The queued store fails at once, unrun, so whoever counted it hears of it.
  std::vector<RecordJobDone> done;
  (*t)->Poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, JobId(2));
  EXPECT_EQ(done[0].status.code(), StatusCode::kAborted) << done[0].status.ToString();
  LeakOnPurpose(std::move(*t));                        // as DiskFiles::Close does when Close fails
  EXPECT_EQ(rig.cufile.Registered(), buffers.size());  // the running job still uses them

  rig.cufile.Hold(false);
  EXPECT_TRUE(rig.cufile.WaitRegistered(0)) << rig.cufile.Registered() << " still registered";
  EXPECT_EQ(rig.cufile.HandlesRegistered(), 1u) << "the queued store ran after Close gave up";
  Result<std::unique_ptr<CuFileDirectIo>> again =
      CuFileDirectIo::Create(rig.cufile.library(), rig.context, buffers);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

// A batch past its timeout is canceled and waited for: never destroyed (and
// its job reported) while an entry may still move bytes into memory the
// caller is about to reuse.
TEST(CuFileDirectIoTest, ABatchPastItsTimeoutIsCanceledAndWaitedForBeforeItIsDestroyed) {
  STRATA_USE_IO_RIG(rig);
  Result<std::unique_ptr<CuFileDirectIo>> io = CuFileDirectIo::Create(
      rig.cufile.library(), rig.context, rig.buffers, {.batch_timeout_ms = 20});
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/record";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  rig.cufile.Pend(true);
  const std::vector<std::vector<DirectIoEntry>> batches = {
      {{.device = 0x10000, .file_offset = 0, .bytes = 4096},
       {.device = 0x20000, .file_offset = 4096, .bytes = 4096}}};
  const std::vector<Status> results = (*io)->Run(fd, TransferDirection::kHostToDevice, batches);
  ::close(fd);
  ASSERT_EQ(results.size(), 2u);
  for (const Status& r : results) {
    EXPECT_EQ(r.code(), StatusCode::kAborted) << r.ToString();
    EXPECT_NE(r.message().find("canceled"), std::string::npos) << r.ToString();
  }
  EXPECT_EQ(rig.cufile.Cancels(), 1u);
  EXPECT_EQ(rig.cufile.DestroyedInFlight(), 0u) << "destroyed while its entries could still run";
}

}  // namespace
}  // namespace strata
