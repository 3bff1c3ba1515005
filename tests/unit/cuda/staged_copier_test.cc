// CopyMethod::kStaged through the fake driver: the engine packs pieces into
// its device window with the kernel and moves the window with contiguous
// DMAs, touching only the batch's host bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cuda/cuda_copy_engine.h"
#include "cuda/gather_kernel.h"
#include "tests/unit/cuda/fake_cuda.h"

namespace strata {
namespace {

constexpr int kCudaErrorLaunchFailed = 719;
constexpr uint64_t kBytes = 4ull << 20;

class StagedEngineTest : public ::testing::Test {
 protected:
  // Pinned host memory and a device range, with the engine's context made
  // current by Start.
  void StartEngine(const FakeCuda& fake, uint32_t in_flight, uint64_t direct_piece_bytes = 0,
                   uint64_t launch_bytes = StagedCopierOptions{}.launch_bytes) {
    CudaEngineOptions o;
    o.method = CopyMethod::kStaged;
    o.batches_in_flight = in_flight;
    o.staged.stage_bytes = 256 << 10;  // several stages per batch
    o.staged.direct_piece_bytes = direct_piece_bytes;
    o.staged.launch_bytes = launch_bytes;
    o.staged.restore_piece_list = restore_list_;
    driver_ = fake.driver();
    engine_ = std::make_unique<CudaCopyEngine>(driver_, o);
    ASSERT_TRUE(engine_->Start().ok());
    host_ = static_cast<uint8_t*>(*driver_->MemAllocHost(2 * kBytes));
    device_ = *driver_->MemAlloc(kBytes);
  }
  RestorePieceList restore_list_ = StagedCopierOptions{}.restore_piece_list;  // read by StartEngine
  // Frees what StartEngine allocated (LeakSanitizer reports the fake's memory).
  void TearDown() override {
    if (engine_ != nullptr) engine_->Stop();
    if (host_ != nullptr) {
      EXPECT_TRUE(driver_->MemFreeHost(host_).ok());
    }
    if (device_ != 0) {
      EXPECT_TRUE(driver_->MemFree(device_).ok());
    }
  }

  // Restores shuffled pieces of mixed sizes (some touching on the host side,
  // some not; device side scattered) and copies them out again elsewhere:
  // both copies are byte-exact and no byte between pieces is written.
  // The restored pieces are left in `restored`.
  void RoundTrip(std::vector<CopyDescriptor>& restored);

  std::shared_ptr<const CudaDriver> driver_;
  std::unique_ptr<CudaCopyEngine> engine_;
  uint8_t* host_ = nullptr;
  uint64_t device_ = 0;
};

void StagedEngineTest::RoundTrip(std::vector<CopyDescriptor>& in) {
  std::mt19937_64 rng(5);
  for (uint64_t i = 0; i < kBytes; ++i) host_[i] = static_cast<uint8_t>(rng());
  std::memset(host_ + kBytes, 0xcc, kBytes);
  // Pieces of mixed sizes, some touching on the host side and some not,
  // shuffled; device side scattered.
  std::vector<CopyDescriptor> out;
  in.clear();
  uint64_t host_at = 0;
  uint64_t device_at = 0;
  while (true) {
    const uint64_t sizes[] = {100, 4096, 16384, 294912};
    const uint64_t n = sizes[rng() % 4];
    if (host_at + n > kBytes / 2 || device_at + n > kBytes) break;
    in.push_back({device_ + device_at, host_ + host_at, n});
    out.push_back({device_ + device_at, host_ + kBytes + host_at, n});
    host_at += n + (rng() % 2) * 512;
    device_at += n + (rng() % 3) * 4096;
  }
  std::shuffle(in.begin(), in.end(), rng);
  ASSERT_TRUE(engine_->CopyBatch(TransferDirection::kHostToDevice, in).ok());
  ASSERT_TRUE(engine_->CopyBatch(TransferDirection::kDeviceToHost, out).ok());
  ASSERT_TRUE(engine_->Drain().ok());
  std::vector<bool> covered(kBytes);
  for (const CopyDescriptor& d : in) {
    const uint64_t at = d.host - host_;
    ASSERT_EQ(std::memcmp(host_ + at, host_ + kBytes + at, d.bytes), 0) << "piece at " << at;
    std::fill(covered.begin() + at, covered.begin() + at + d.bytes, true);
  }
  for (uint64_t i = 0; i < kBytes; ++i) {
    if (!covered[i]) {
      ASSERT_EQ(host_[kBytes + i], 0xcc) << "gap byte " << i << " written";
    }
  }
}

TEST_F(StagedEngineTest, RoundTripIsByteExactAndLeavesGapsBetweenPiecesAlone) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  StartEngine(fake, 2);
  std::vector<CopyDescriptor> pieces;
  RoundTrip(pieces);
  EXPECT_LE(fake.Value("launch_grid_max"), 2);
  EXPECT_GT(fake.Calls("cuStreamWaitEvent"), 1u);  // one hand-off per stage
}

TEST_F(StagedEngineTest, KernelLaunchesAreCutToTheLaunchBound) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  StartEngine(fake, 2, /*direct_piece_bytes=*/0, /*launch_bytes=*/64 << 10);
  std::vector<CopyDescriptor> pieces;
  RoundTrip(pieces);
  uint64_t bytes = 0;
  for (const CopyDescriptor& d : pieces) bytes += d.bytes;
  // No launch holds the SMs for more than 64 KiB of pieces, so a 256 KiB
  // stage takes at least four.
  EXPECT_LE(fake.Value("launch_bytes_max"), 64 << 10);
  EXPECT_GE(fake.Calls("cuLaunchKernel"), 2 * bytes / (64 << 10));
}

TEST_F(StagedEngineTest, LargePiecesBypassTheWindowAndTheRoundTripStaysExact) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  StartEngine(fake, 2, /*direct_piece_bytes=*/16384);
  std::vector<CopyDescriptor> pieces;
  RoundTrip(pieces);
  // Only the pieces under 16 KiB went through the kernel, once each way; the
  // 16 KiB and 288 KiB ones moved by DMA straight to and from the planes.
  long long staged = 0;
  for (const CopyDescriptor& d : pieces) {
    if (d.bytes < 16384) staged += static_cast<long long>(d.bytes);
  }
  ASSERT_GT(staged, 0);
  EXPECT_EQ(fake.Value("kernel_bytes"), 2 * staged);
}

TEST_F(StagedEngineTest, RestoresReadingThePinnedPieceListStayExact) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  restore_list_ = RestorePieceList::kMappedHost;
  StartEngine(fake, 2);
  std::vector<CopyDescriptor> pieces;
  RoundTrip(pieces);
  // Every piece went through the kernel once each way; the restores' kernels
  // read their lists from pinned host memory (the fake refuses any other).
  long long total = 0;
  for (const CopyDescriptor& d : pieces) total += static_cast<long long>(d.bytes);
  EXPECT_EQ(fake.Value("kernel_bytes"), 2 * total);
}

TEST_F(StagedEngineTest, RestoresWithThePieceListUploadedAheadOfTheExtentsStayExact) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  restore_list_ = RestorePieceList::kUploaded;
  StartEngine(fake, 2);
  std::vector<CopyDescriptor> pieces;
  RoundTrip(pieces);
  EXPECT_LE(fake.Value("param_launches"), 0);  // -1: never counted
}

TEST_F(StagedEngineTest, RestoreLaunchesCarryAtMost254PiecesInTheirParameters) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  restore_list_ = RestorePieceList::kParams;
  StartEngine(fake, 1);
  // 600 pieces of 64 bytes, contiguous on the host, every other 64 bytes on
  // the device: one stage, cut into launches of at most 254 pieces.
  std::mt19937_64 rng(9);
  for (uint64_t i = 0; i < 600 * 64; ++i) host_[i] = static_cast<uint8_t>(rng());
  std::vector<CopyDescriptor> batch;
  for (uint64_t i = 0; i < 600; ++i) batch.push_back({device_ + i * 128, host_ + i * 64, 64});
  ASSERT_TRUE(engine_->CopyBatch(TransferDirection::kHostToDevice, batch).ok());
  std::vector<uint8_t> back(600 * 128);
  ASSERT_TRUE(
      driver_->CopySync(TransferDirection::kDeviceToHost, device_, back.data(), back.size()).ok());
  for (uint64_t i = 0; i < 600; ++i) {
    ASSERT_EQ(std::memcmp(back.data() + i * 128, host_ + i * 64, 64), 0) << "piece " << i;
  }
  EXPECT_EQ(fake.Value("param_launches"), 3);  // 254 + 254 + 92
}

TEST_F(StagedEngineTest, KernelFailureIsReportedAfterBothStreamsDrained) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  StartEngine(fake, 1);
  std::vector<CopyDescriptor> batch = {{device_, host_, 64 << 10}};
  const auto syncs = fake.Calls("cuStreamSynchronize");
  fake.Inject("cuLaunchKernel", kCudaErrorLaunchFailed);
  Status s = engine_->CopyBatch(TransferDirection::kDeviceToHost, batch);
  EXPECT_NE(s.message().find("cuLaunchKernel"), std::string::npos) << s.ToString();
  EXPECT_EQ(fake.Calls("cuStreamSynchronize") - syncs, 2u);  // kernel stream and DMA stream
  // The engine stays usable.
  EXPECT_TRUE(engine_->CopyBatch(TransferDirection::kDeviceToHost, batch).ok());
}

TEST_F(StagedEngineTest, OverlappingHostPiecesAreRefused) {
  STRATA_USE_FAKE_CUDA(fake);
  if (!GatherKernelBuilt()) GTEST_SKIP() << "gather kernel not built";
  StartEngine(fake, 1);
  std::vector<CopyDescriptor> batch = {{device_, host_, 8192},
                                       {device_ + 8192, host_ + 4096, 8192}};
  Status s = engine_->CopyBatch(TransferDirection::kDeviceToHost, batch);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

}  // namespace
}  // namespace strata
