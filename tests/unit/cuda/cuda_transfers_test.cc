#include "cuda/cuda_transfers.h"

#include <gtest/gtest.h>

#include "cuda/cuda_registrar.h"
#include "cuda/gather_kernel.h"
#include "launch/presets.h"
#include "tests/support/cuda_round_trip.h"
#include "tests/unit/cuda/fake_cuda.h"

namespace strata {

void PrintTo(CopyMethod m, std::ostream* os) { *os << CopyMethodName(m); }

namespace {

using test::AllocateSlabs;
using test::CheckPatterns;
using test::MoveWindows;
using test::Slabs;
using test::WritePatterns;

constexpr int kCudaErrorInvalidValue = 1;
constexpr int kCudaErrorIllegalAddress = 700;

TEST(AssignDevicesTest, RoundRobinByDefaultAndValidatesRequests) {
  EXPECT_EQ(*AssignDevices(3, 2, {}), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(*AssignDevices(2, 4, {3, 1}), (std::vector<int>{3, 1}));
  EXPECT_EQ(AssignDevices(2, 4, {1}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AssignDevices(1, 2, {2}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AssignDevices(1, 0, {}).status().code(), StatusCode::kUnavailable);
}

TEST(CopyMethodTest, NamesRoundTrip) {
  for (CopyMethod m :
       {CopyMethod::kBatched, CopyMethod::kStrided, CopyMethod::kKernel, CopyMethod::kStaged}) {
    EXPECT_EQ(*ParseCopyMethod(CopyMethodName(m)), m);
  }
  EXPECT_EQ(ParseCopyMethod("dma").status().code(), StatusCode::kInvalidArgument);
}

struct Rig {
  std::unique_ptr<CudaPlanes> planes;
  std::unique_ptr<CudaHostRegistrar> registrar;
  std::unique_ptr<SlabPool> pool;
  std::unique_ptr<Transfers> transfers;
};

Rig MakeRig(const FakeCuda& fake, const char* preset, uint32_t ranks, uint64_t pages,
            CopyMethod method, uint32_t batches_in_flight = 1) {
  Rig rig;
  CacheGeometry g = *PresetGeometry(preset, ranks, pages, 4);
  rig.planes = *CudaPlanes::Create(fake.driver(), g, std::vector<int>(ranks, 0));
  rig.registrar = *CudaHostRegistrar::Create(fake.driver(), 0);
  RecordLayout layout(g);
  rig.pool = *SlabPool::Create(layout.page_record_bytes(), pages + 64, 0, rig.registrar.get());
  CudaTransfersOptions options;
  options.method = method;
  options.batches_in_flight = batches_in_flight;
  auto t = MakeCudaTransfers(*rig.planes, options);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (t.ok()) rig.transfers = std::move(*t);
  return rig;
}

struct EngineCase {
  CopyMethod method;
  uint32_t in_flight;
};

void PrintTo(const EngineCase& c, std::ostream* os) {
  *os << CopyMethodName(c.method) << " x" << c.in_flight;
}

class CudaTransfersFakeTest : public ::testing::TestWithParam<EngineCase> {};

TEST_P(CudaTransfersFakeTest, MultiWindowRoundTripIntoDifferentIdsIsByteExact) {
  STRATA_USE_FAKE_CUDA(fake);
  const CopyMethod method = GetParam().method;
  if ((method == CopyMethod::kKernel || method == CopyMethod::kStaged) && !GatherKernelBuilt()) {
    GTEST_SKIP() << "gather kernel not built";
  }
  // small-planes: 48 planes of 4 KiB, a row spanning two slab slots.
  for (const char* preset : {"tiny", "small-planes"}) {
    Rig rig = MakeRig(fake, preset, 2, 200, method, GetParam().in_flight);
    ASSERT_NE(rig.transfers, nullptr);
    // 150 pages: three windows. Sources run in consecutive ids (strided
    // copies apply) with a gap; destinations are scattered.
    std::vector<PageId> src, dst;
    for (uint32_t i = 0; i < 150; ++i) {
      src.push_back(PageId(i < 100 ? 5 + i : 10 + i));
      dst.push_back(PageId((i * 37 + 5) % 200));
    }
    ASSERT_TRUE(WritePatterns(*rig.planes, src, StateSlot(1)).ok());
    Slabs slabs = AllocateSlabs(*rig.pool, RecordLayout(rig.planes->geometry()), src.size());
    uint64_t job = 1;
    Status out = MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, src, StateSlot(1),
                             slabs, job);
    ASSERT_TRUE(out.ok()) << out.ToString();
    ASSERT_TRUE(rig.planes->Fill(0xee).ok());
    Status in = MoveWindows(*rig.transfers, TransferDirection::kHostToDevice, dst, StateSlot(3),
                            slabs, job);
    ASSERT_TRUE(in.ok()) << in.ToString();
    EXPECT_EQ(CheckPatterns(*rig.planes, dst, StateSlot(3)), "") << preset;
    ASSERT_TRUE(rig.transfers->Close(std::chrono::seconds(10)).ok());
  }
  switch (method) {
    case CopyMethod::kBatched:
      EXPECT_GT(fake.Calls("cuMemcpyBatchAsync"), 0u);
      EXPECT_EQ(fake.Calls("cuMemcpy3DBatchAsync"), 0u);
      break;
    case CopyMethod::kStrided:
      EXPECT_GT(fake.Calls("cuMemcpy3DBatchAsync"), 0u);  // the consecutive source ids
      break;
    case CopyMethod::kKernel:
      EXPECT_GT(fake.Calls("cuLaunchKernel"), 0u);
      EXPECT_EQ(fake.Calls("cuMemcpyBatchAsync"), 0u);
      break;
    case CopyMethod::kStaged:
      // Kernels pack and unpack the window; DMAs move it; the streams hand off.
      EXPECT_GT(fake.Calls("cuLaunchKernel"), 0u);
      // One DMA per extent: single ones directly, several in one batched call.
      EXPECT_GT(fake.Calls("cuMemcpyDtoHAsync") + fake.Calls("cuMemcpyBatchAsync"), 0u);
      EXPECT_GT(fake.Calls("cuStreamWaitEvent"), 0u);
      EXPECT_LE(fake.Value("launch_grid_max"), 2);  // the default SM bound
      EXPECT_EQ(fake.Value("launch_block"), 1024);
      break;
  }
  EXPECT_LE(fake.Value("batch_entries_max"), static_cast<long long>(kMaxBatchEntries));
  // One lowest-priority non-blocking stream and blocking-sync events.
  EXPECT_EQ(fake.Value("stream_priority"), 0);      // the fake's least priority
  EXPECT_EQ(fake.Value("stream_flags"), 0x1);       // CU_STREAM_NON_BLOCKING
  EXPECT_EQ(fake.Value("event_flags"), 0x1 | 0x2);  // BLOCKING_SYNC | DISABLE_TIMING
}

INSTANTIATE_TEST_SUITE_P(
    Methods, CudaTransfersFakeTest,
    ::testing::Values(EngineCase{CopyMethod::kBatched, 1}, EngineCase{CopyMethod::kStrided, 1},
                      EngineCase{CopyMethod::kKernel, 1}, EngineCase{CopyMethod::kBatched, 2},
                      EngineCase{CopyMethod::kKernel, 2}, EngineCase{CopyMethod::kStaged, 1},
                      EngineCase{CopyMethod::kStaged, 2}),
    [](const auto& info) {
      return std::string(CopyMethodName(info.param.method)) + "_x" +
             std::to_string(info.param.in_flight);
    });

TEST(CudaTransfersTest, ReplicatedRestoreFansOneShareOutToEveryRank) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig = MakeRig(fake, "tiny", 3, 100, DefaultCopyMethod());
  ASSERT_NE(rig.transfers, nullptr);
  std::vector<PageId> src = {PageId(1), PageId(2), PageId(50)};
  std::vector<PageId> dst = {PageId(70), PageId(3), PageId(99)};
  ASSERT_TRUE(WritePatterns(*rig.planes, src, StateSlot(0)).ok());
  Slabs slabs = AllocateSlabs(*rig.pool, RecordLayout(rig.planes->geometry()), src.size());
  uint64_t job = 1;
  ASSERT_TRUE(
      MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, src, StateSlot(0), slabs, job)
          .ok());
  ASSERT_TRUE(rig.planes->Fill(0).ok());
  // The per-rank records hold rank 0's share first: restore it replicated.
  ASSERT_TRUE(MoveWindows(*rig.transfers, TransferDirection::kHostToDevice, dst, StateSlot(2),
                          slabs, job, /*replicated=*/true)
                  .ok());
  EXPECT_EQ(CheckPatterns(*rig.planes, dst, StateSlot(2), /*share_rank=*/0), "");
}

TEST(CudaTransfersTest, CopyFailureIsReportedWithItsNameAfterTheStreamDrained) {
  STRATA_USE_FAKE_CUDA(fake);
  Rig rig = MakeRig(fake, "tiny", 2, 16, CopyMethod::kBatched);
  ASSERT_NE(rig.transfers, nullptr);
  Slabs slabs = AllocateSlabs(*rig.pool, RecordLayout(rig.planes->geometry()), 2);
  const auto event_waits = fake.Calls("cuEventSynchronize");
  const auto stream_waits = fake.Calls("cuStreamSynchronize");
  fake.Inject("cuMemcpyBatchAsync", kCudaErrorIllegalAddress);
  uint64_t job = 1;
  Status s = MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, {PageId(0), PageId(1)},
                         StateSlot(0), slabs, job);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("cuMemcpyBatchAsync: CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << s.ToString();
  // The healthy rank waited on its event; the failed one drained its stream
  // before the failure was reported.
  EXPECT_EQ(fake.Calls("cuEventSynchronize") - event_waits, 1u);
  EXPECT_EQ(fake.Calls("cuStreamSynchronize") - stream_waits, 1u);
  // The transfers stay usable.
  EXPECT_TRUE(MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, {PageId(0)},
                          StateSlot(0), slabs, job)
                  .ok());
}

TEST(CudaTransfersTest, PipelinedFailureIsReportedAfterEveryIssuedBatchDrained) {
  STRATA_USE_FAKE_CUDA(fake);
  // qwen-like pages are 576 KiB: a 64-page window spans three 16 MiB batches.
  Rig rig = MakeRig(fake, "qwen-like", 1, 64, CopyMethod::kBatched, /*batches_in_flight=*/2);
  ASSERT_NE(rig.transfers, nullptr);
  std::vector<PageId> ids;
  for (uint32_t i = 0; i < 64; ++i) ids.push_back(PageId(i));
  Slabs slabs = AllocateSlabs(*rig.pool, RecordLayout(rig.planes->geometry()), ids.size());
  uint64_t job = 1;
  ASSERT_TRUE(
      MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, ids, StateSlot(0), slabs, job)
          .ok());
  const auto batches = fake.Calls("cuMemcpyBatchAsync");
  EXPECT_GE(batches, 3u);
  // Fail the first event wait: batch one's completion, seen while batch two
  // is queued behind it.
  fake.Inject("cuEventSynchronize", kCudaErrorIllegalAddress);
  const auto stream_syncs = fake.Calls("cuStreamSynchronize");
  Status s =
      MoveWindows(*rig.transfers, TransferDirection::kDeviceToHost, ids, StateSlot(0), slabs, job);
  EXPECT_NE(s.message().find("cuEventSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << s.ToString();
  EXPECT_EQ(fake.Calls("cuStreamSynchronize") - stream_syncs, 1u);  // drained before reporting
}

TEST(CudaTransfersTest, UnregisteredHostMemoryIsRefusedByTheDriver) {
  STRATA_USE_FAKE_CUDA(fake);
  CacheGeometry g = *PresetGeometry("tiny", 1, 8, 2);
  auto planes = *CudaPlanes::Create(fake.driver(), g, {0});
  auto t = *MakeCudaTransfers(*planes);
  auto pool = *SlabPool::Create(RecordLayout(g).page_record_bytes(), 8, 0);  // not registered
  Slabs slabs = AllocateSlabs(*pool, RecordLayout(g), 1);
  uint64_t job = 1;
  Status s =
      MoveWindows(*t, TransferDirection::kDeviceToHost, {PageId(0)}, StateSlot(0), slabs, job);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << s.ToString();
}

TEST(CudaTransfersTest, EngineStartFailureFailsCreationAndNamesTheDevice) {
  STRATA_USE_FAKE_CUDA(fake);
  CacheGeometry g = *PresetGeometry("tiny", 2, 8, 2);
  auto planes = *CudaPlanes::Create(fake.driver(), g, {0, 0});
  fake.Inject("cuStreamCreateWithPriority", kCudaErrorInvalidValue);
  auto t = MakeCudaTransfers(*planes);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("CUDA device 0"), std::string::npos) << t.status().ToString();
  EXPECT_NE(t.status().message().find("cuStreamCreateWithPriority"), std::string::npos);
  // The rank that started released its context again: retains balance releases.
  EXPECT_EQ(fake.Calls("cuDevicePrimaryCtxRetain") - 2,  // CudaPlanes' two ranks
            fake.Calls("cuDevicePrimaryCtxRelease"));
}

}  // namespace
}  // namespace strata
