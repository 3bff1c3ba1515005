// A runtime's cudaMalloc'd planes shared by legacy CUDA IPC handles, through
// the fake driver (whose cuIpcOpenMemHandle maps the block at a new address,
// as the real one does): the transfers built once over ImportedIpcPlanes copy
// through the opened addresses, a re-import with a new runtime's handles
// lands elsewhere and restores there byte-exact, nothing is submitted while
// released, Release closes every mapping, and a plane past its block's end
// or a block of another device than the rank's is refused.
#include "cuda/imported_ipc_planes.h"

#include <gtest/gtest.h>

#include "launch/presets.h"
#include "tests/support/cuda_round_trip.h"
#include "tests/support/ipc_handles.h"
#include "tests/unit/cuda/fake_cuda.h"

namespace strata {
namespace {

constexpr uint64_t kPages = 64;

CacheGeometry Geometry() { return *PresetGeometry("tiny", 1, kPages, 4); }

struct Rig : test::ImportRig<ImportedIpcPlanes> {
  explicit Rig(const FakeCuda& fake) : ImportRig(fake.driver(), Geometry(), kPages) {}
};

TEST(ImportedIpcPlanesTest, CopiesRunThroughTheOpenedAddressesByteExact) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  auto runtime = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  ASSERT_TRUE(rig.planes->Import(test::IpcHandlesOf(*fake.driver(), *runtime)).ok());
  std::shared_ptr<const PlaneBases> bases = rig.planes->current_bases();
  ASSERT_NE(bases, nullptr);
  EXPECT_NE((*bases)[0].page_plane_base[0], runtime->page_address(0, 0, PageId(0)))
      << "the fake must open at another address than the exporter's";
  EXPECT_NE((*bases)[0].row_base, runtime->row_address(0, StateSlot(0)));

  const std::vector<PageId> src = test::PageIds(3, 20), dst = test::PageIds(30, 20);
  ASSERT_TRUE(test::WritePatterns(*runtime, src, StateSlot(1)).ok());
  test::Slabs slabs = test::AllocateSlabs(*rig.pool, RecordLayout(Geometry()), src.size());
  uint64_t job = 1;
  Status out = test::MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, src,
                                 StateSlot(1), slabs, job);
  ASSERT_TRUE(out.ok()) << out.ToString();
  ASSERT_TRUE(runtime->Fill(0xee).ok());
  Status in = test::MoveWindows(*rig.transfers, TransferDirection::kHostToDevice, dst, StateSlot(2),
                                slabs, job);
  ASSERT_TRUE(in.ok()) << in.ToString();
  EXPECT_EQ(test::CheckPatterns(*runtime, dst, StateSlot(2)), "");

  rig.planes->Release();
  EXPECT_EQ(rig.planes->current_bases(), nullptr);
  EXPECT_EQ(fake.Calls("cuIpcCloseMemHandle"), fake.Calls("cuIpcOpenMemHandle"));
  EXPECT_EQ(fake.Value("ipc_opened"), 0);
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

TEST(ImportedIpcPlanesTest, AReattachedRuntimeRestoresIntoItsNewMapping) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  const std::vector<PageId> src = test::PageIds(0, 10), dst = test::PageIds(40, 10);
  test::Slabs slabs = test::AllocateSlabs(*rig.pool, RecordLayout(Geometry()), src.size());
  uint64_t job = 1;
  uint64_t first_base = 0;
  {
    auto first = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
    ASSERT_TRUE(rig.planes->Import(test::IpcHandlesOf(*fake.driver(), *first)).ok());
    first_base = (*rig.planes->current_bases())[0].page_plane_base[0];
    ASSERT_TRUE(test::WritePatterns(*first, src, StateSlot(0)).ok());
    ASSERT_TRUE(test::MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, src,
                                  StateSlot(0), slabs, job)
                    .ok());
    rig.planes->Release();  // the runtime detached (its copies drained)
  }
  // Nothing is mapped: a job is refused, not copied into closed memory.
  Status refused = test::MoveWindows(*rig.transfers, TransferDirection::kHostToDevice, dst,
                                     StateSlot(1), slabs, job);
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();

  // The restarted runtime: new blocks, opened somewhere else.
  auto second = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  ASSERT_TRUE(second->Fill(0).ok());
  ASSERT_TRUE(rig.planes->Import(test::IpcHandlesOf(*fake.driver(), *second)).ok());
  EXPECT_NE((*rig.planes->current_bases())[0].page_plane_base[0], first_base);
  Status in = test::MoveWindows(*rig.transfers, TransferDirection::kHostToDevice, dst, StateSlot(1),
                                slabs, job);
  ASSERT_TRUE(in.ok()) << in.ToString();
  EXPECT_EQ(test::CheckPatterns(*second, dst, StateSlot(1)), "");
  rig.planes->Release();
  EXPECT_EQ(fake.Value("ipc_opened"), 0);
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

// The bytes of each plane of Geometry()'s rank, pages first, then the row.
std::vector<uint64_t> PlaneBytes() {
  const CacheGeometry geometry = Geometry();
  const RankGeometry& g = geometry.ranks[0];
  std::vector<uint64_t> out;
  for (const PlaneSpec& p : g.page_planes) out.push_back(p.unit_bytes * g.page_count);
  out.push_back(g.row.unit_bytes * g.row_count);
  return out;
}

// What a caching allocator sends: every plane in one cudaMalloc block of
// `block_bytes`, back to back from offset 0.
std::vector<PlaneFd> OneBlock(const CudaDriver& d, uint64_t block_bytes) {
  ContextGuard guard(d, *d.RetainPrimaryContext(0));
  const uint64_t block = *d.MemAlloc(block_bytes);
  const IpcMemHandle handle = *d.IpcHandleOf(block);
  std::vector<PlaneFd> out;
  const std::vector<uint64_t> bytes = PlaneBytes();
  uint64_t offset = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const bool row = i + 1 == bytes.size();
    out.push_back({.rank = 0,
                   .page_plane = row ? std::nullopt : std::optional<uint32_t>(i),
                   .fd = -1,
                   .ipc = IpcPlane{.handle = handle, .offset = offset}});
    offset += bytes[i];
  }
  return out;
}

uint64_t Sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return s;
}

TEST(ImportedIpcPlanesTest, PlanesInOneBlockOpenItOnceAtTheirOffsets) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  const std::vector<PlaneFd> handles = OneBlock(*fake.driver(), Sum(PlaneBytes()));
  ASSERT_TRUE(rig.planes->Import(handles).ok());
  EXPECT_EQ(fake.Calls("cuIpcOpenMemHandle"), 1u);
  const RankPlanes& bases = (*rig.planes->current_bases())[0];
  EXPECT_EQ(bases.page_plane_base[1], bases.page_plane_base[0] + PlaneBytes()[0]);
  rig.planes->Release();
  EXPECT_EQ(fake.Calls("cuIpcCloseMemHandle"), 1u);
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

TEST(ImportedIpcPlanesTest, APlaneRunningPastItsBlockIsRefusedAndNothingStaysOpen) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  // One byte short: the row plane, last in the block, runs past its end.
  const std::vector<PlaneFd> handles = OneBlock(*fake.driver(), Sum(PlaneBytes()) - 1);
  Status s = rig.planes->Import(handles);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("row plane"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("past the end of its shared block"), std::string::npos)
      << s.ToString();
  EXPECT_FALSE(rig.planes->imported());
  EXPECT_EQ(rig.planes->current_bases(), nullptr);
  EXPECT_EQ(fake.Value("ipc_opened"), 0);
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

TEST(ImportedIpcPlanesTest, ABlockOfAnotherDeviceIsRefused) {
  STRATA_USE_FAKE_CUDA(fake);
  fake.SetDeviceCount(2);
  // The rank's planes belong on device 1; the fake's memory is device 0's.
  auto importer = *ImportedIpcPlanes::Create(fake.driver(), Geometry(), {1});
  const std::vector<PlaneFd> handles = OneBlock(*fake.driver(), Sum(PlaneBytes()));
  Status s = importer->Import(handles);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("memory of device 0, not of this rank's device 1"), std::string::npos)
      << s.ToString();
  EXPECT_FALSE(importer->imported());
  EXPECT_EQ(fake.Value("ipc_opened"), 0);
}

TEST(ImportedIpcPlanesTest, AFailedOpenLeavesNothingOpen) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig(fake);
  auto runtime = *CudaPlanes::Create(fake.driver(), Geometry(), {0});
  std::vector<PlaneFd> handles = test::IpcHandlesOf(*fake.driver(), *runtime);
  handles.back().ipc->handle[0] ^= 0x40;  // a block that is no allocation
  Status s = rig.planes->Import(handles);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("row plane"), std::string::npos) << s.ToString();
  EXPECT_FALSE(rig.planes->imported());
  EXPECT_EQ(rig.planes->current_bases(), nullptr);
  EXPECT_EQ(fake.Value("ipc_opened"), 0);
  ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
}

}  // namespace
}  // namespace strata
