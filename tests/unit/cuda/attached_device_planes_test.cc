// The GPU planes `strata rank --gpus` offers an attached runtime
// (cuda/attached_device_planes.h), through the fake driver, which has legacy
// IPC but no VMM sharing: the rank offers only the forms its driver can
// import; transfers built once over it copy through each attachment's
// mapping byte-exact; a release withdraws the bases before the next attach;
// and a form the driver lacks, or a mix of forms, is refused with nothing
// imported.
#include "cuda/attached_device_planes.h"

#include <gtest/gtest.h>

#include "launch/presets.h"
#include "tests/support/cuda_round_trip.h"
#include "tests/support/ipc_handles.h"
#include "tests/unit/cuda/fake_cuda.h"

namespace strata {
namespace {

using test::AllocateSlabs;
using test::CheckPatterns;
using test::IpcHandlesOf;
using test::MoveWindows;
using test::PageIds;
using test::Slabs;
using test::WritePatterns;

constexpr uint64_t kPages = 64;

CacheGeometry Geometry() { return *PresetGeometry("tiny", 1, kPages, 4); }

struct Rig : test::ImportRig<AttachedDevicePlanes> {
  explicit Rig(const FakeCuda& fake) : ImportRig(fake.driver(), Geometry(), kPages) {}
};

TEST(AttachedDevicePlanesTest, OffersOnlyTheFormsTheDriverCanImport) {
  STRATA_USE_FAKE_CUDA(fake);
  ASSERT_FALSE(fake.driver()->has_shareable_handles());
  ASSERT_TRUE(fake.driver()->has_legacy_ipc());
  Rig rig(fake);
  EXPECT_EQ(rig.planes->handle_kinds(), std::vector<PlaneHandleKind>{PlaneHandleKind::kCudaIpc});
  // A Hello sharing VMM fds is refused by kind; nothing is imported.
  std::vector<PlaneFd> fds = {{.rank = 0, .page_plane = 0, .fd = 7, .ipc = std::nullopt}};
  Status s = rig.planes->Import(fds);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("CUDA VMM"), std::string::npos) << s.ToString();
  EXPECT_FALSE(rig.planes->imported());
  EXPECT_EQ(rig.planes->current_bases(), nullptr);
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

TEST(AttachedDevicePlanesTest, EachAttachmentRestoresByteExactThroughItsOwnMapping) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  const CudaDriver& d = *fake.driver();
  const std::vector<PageId> src = PageIds(3, 20), dst = PageIds(30, 20);
  Slabs slabs = AllocateSlabs(*rig.pool, RecordLayout(Geometry()), src.size());
  uint64_t job = 1;

  auto first = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  ASSERT_TRUE(rig.planes->Import(IpcHandlesOf(d, *first)).ok());
  ASSERT_TRUE(rig.planes->imported());
  const uint64_t first_base = (*rig.planes->current_bases())[0].page_plane_base[0];
  ASSERT_TRUE(WritePatterns(*first, src, StateSlot(1)).ok());
  Status out =
      MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, src, StateSlot(1), slabs, job);
  ASSERT_TRUE(out.ok()) << out.ToString();
  rig.planes->Release();
  EXPECT_FALSE(rig.planes->imported());
  EXPECT_EQ(rig.planes->current_bases(), nullptr);
  EXPECT_EQ(fake.Value("ipc_opened"), 0);
  // Nothing is imported: a job is refused, not copied through the old mapping.
  EXPECT_FALSE(
      MoveWindows(*rig.transfers, TransferDirection::kHostToDevice, dst, StateSlot(2), slabs, job)
          .ok());

  // A restarted runtime's new planes: restored there, byte-exact.
  auto second = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  ASSERT_TRUE(rig.planes->Import(IpcHandlesOf(d, *second)).ok());
  EXPECT_NE((*rig.planes->current_bases())[0].page_plane_base[0], first_base);
  Status in =
      MoveWindows(*rig.transfers, TransferDirection::kHostToDevice, dst, StateSlot(2), slabs, job);
  ASSERT_TRUE(in.ok()) << in.ToString();
  EXPECT_EQ(CheckPatterns(*second, dst, StateSlot(2)), "");
  rig.planes->Release();
  EXPECT_EQ(fake.Calls("cuIpcCloseMemHandle"), fake.Calls("cuIpcOpenMemHandle"));
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

// What the direct transport registers with cuFile per attachment.
TEST(AttachedDevicePlanesTest, AMappingObserverHearsOfEachAttachmentAndEachRelease) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  const CudaDriver& d = *fake.driver();
  std::vector<std::optional<uint64_t>> heard;  // each call: the first plane's base, or none
  auto observe = [&](const PlaneBases* mapped) {
    heard.push_back(mapped != nullptr ? std::optional<uint64_t>((*mapped)[0].page_plane_base[0])
                                      : std::nullopt);
  };
  auto first = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  ASSERT_TRUE(rig.planes->Import(IpcHandlesOf(d, *first)).ok());
  const uint64_t first_base = (*rig.planes->current_bases())[0].page_plane_base[0];
  rig.planes->SetMappingObserver(observe);  // told at once of the planes mapped now
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0], first_base);
  rig.planes->Release();
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_EQ(heard[1], std::nullopt);
  auto second = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  ASSERT_TRUE(rig.planes->Import(IpcHandlesOf(d, *second)).ok());
  ASSERT_EQ(heard.size(), 3u);
  EXPECT_EQ(heard[2], (*rig.planes->current_bases())[0].page_plane_base[0]);
  rig.planes->SetMappingObserver(nullptr);
  rig.planes->Release();
  EXPECT_EQ(heard.size(), 3u) << "a cleared observer hears nothing";
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

TEST(AttachedDevicePlanesTest, PlanesSharedPartlyByHandleAndPartlyByFdAreRefused) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  auto runtime = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  std::vector<PlaneFd> handles = IpcHandlesOf(*fake.driver(), *runtime);
  handles.back().ipc.reset();
  handles.back().fd = 9;
  Status s = rig.planes->Import(handles);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_FALSE(rig.planes->imported());
  EXPECT_EQ(fake.Calls("cuIpcOpenMemHandle"), 0u);
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

}  // namespace
}  // namespace strata
