#include "cuda/staging_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace strata {
namespace {

constexpr uint64_t kKiB = 1024;

StagingLimits Limits(uint64_t window, uint64_t stage, uint64_t piece, uint64_t direct = 0) {
  return StagingLimits{.window_bytes = window,
                       .stage_bytes = stage,
                       .kernel_piece_bytes = piece,
                       .direct_piece_bytes = direct};
}

// Every window byte a piece names, and every host byte an extent writes.
struct Coverage {
  std::vector<int> window;  // pieces per window byte
  std::vector<int> host;    // extents per host byte
};

// Runs the plan the way the copier does, on host memory: gather `device`
// into a window by pieces, then "DMA" each extent into `host`.
void RunCopyOut(const StagingPlanner& plan, const std::vector<uint8_t>& window_init,
                std::vector<uint8_t>& host) {
  std::vector<uint8_t> window = window_init;
  for (const StagedPiece& p : plan.pieces()) {
    std::memcpy(window.data() + p.window, reinterpret_cast<const void*>(p.device), p.bytes);
  }
  for (const StagedExtent& e : plan.extents()) {
    ASSERT_GE(e.host, host.data());
    ASSERT_LE(e.host + e.bytes, host.data() + host.size());
    std::memcpy(e.host, window.data() + e.window, e.bytes);
  }
  for (const CopyDescriptor& d : plan.direct()) {
    std::memcpy(d.host, reinterpret_cast<const void*>(d.device), d.bytes);
  }
}

TEST(StagingPlanTest, TouchingPiecesOfRecordsBecomeOneExtentInHostOrder) {
  std::vector<uint8_t> host(64 * kKiB);
  const uint64_t dev = 1ull << 40;  // plane addresses are never dereferenced by the plan
  // Two records of two 16 KiB planes each, listed plane-major (as the
  // transfer thread never does, to check the host-order sort).
  std::vector<CopyDescriptor> batch = {
      {dev + 0, host.data() + 0, 16 * kKiB},
      {dev + 100 * kKiB, host.data() + 32 * kKiB, 16 * kKiB},
      {dev + 500 * kKiB, host.data() + 16 * kKiB, 16 * kKiB},
      {dev + 900 * kKiB, host.data() + 48 * kKiB, 16 * kKiB},
  };
  StagingPlanner plan;
  ASSERT_TRUE(plan.Plan(batch, Limits(1 << 20, 1 << 20, 16 * kKiB)).ok());
  ASSERT_EQ(plan.extents().size(), 1u);
  EXPECT_EQ(plan.extents()[0].host, host.data());
  EXPECT_EQ(plan.extents()[0].bytes, 64 * kKiB);
  ASSERT_EQ(plan.pieces().size(), 4u);
  // The window mirrors the host: the piece landing at host + 16 KiB sits at
  // window offset 16 KiB.
  EXPECT_EQ(plan.pieces()[1].device, dev + 500 * kKiB);
  EXPECT_EQ(plan.pieces()[1].window, 16 * kKiB);
  ASSERT_EQ(plan.stages().size(), 1u);
  EXPECT_EQ(plan.stages()[0].piece_count, 4u);
  EXPECT_EQ(plan.window_used(), 64 * kKiB);
}

TEST(StagingPlanTest, AGapBetweenPiecesSplitsTheExtentAndIsNeverWritten) {
  std::vector<uint8_t> host(32 * kKiB, 0xcc);
  std::vector<uint8_t> planes(24 * kKiB, 0x11);
  // 1000-byte units padded to 4 KiB host slots: each piece its own extent.
  std::vector<CopyDescriptor> batch;
  for (int i = 0; i < 6; ++i) {
    batch.push_back(
        {reinterpret_cast<uint64_t>(planes.data()) + i * 1000u, host.data() + i * 4 * kKiB, 1000});
  }
  StagingPlanner plan;
  ASSERT_TRUE(plan.Plan(batch, Limits(1 << 20, 1 << 20, 16 * kKiB)).ok());
  ASSERT_EQ(plan.extents().size(), 6u);
  for (const StagedExtent& e : plan.extents()) {
    EXPECT_EQ(e.bytes, 1000u);
    EXPECT_EQ(e.window % kStagingExtentAlignment, 0u);
  }
  RunCopyOut(plan, std::vector<uint8_t>(1 << 20, 0xee), host);
  for (int i = 0; i < 6; ++i) {
    const uint8_t* slot = host.data() + i * 4 * kKiB;
    EXPECT_EQ(std::count(slot, slot + 1000, 0x11), 1000) << i;
    EXPECT_EQ(std::count(slot + 1000, slot + 4 * kKiB, 0xcc), 4 * kKiB - 1000) << i;
  }
}

TEST(StagingPlanTest, StagesAndKernelPiecesAreBounded) {
  std::vector<uint8_t> host(1 << 20);
  const uint64_t dev = 1ull << 40;
  // One 288 KiB piece and one 700 KiB piece, touching: stages of 256 KiB.
  std::vector<CopyDescriptor> batch = {{dev, host.data(), 288 * kKiB},
                                       {dev + (1 << 24), host.data() + 288 * kKiB, 700 * kKiB}};
  StagingPlanner plan;
  const StagingLimits limits = Limits(1 << 20, 256 * kKiB, 16 * kKiB);
  ASSERT_TRUE(plan.Plan(batch, limits).ok());
  EXPECT_EQ(plan.stages().size(), 4u);  // 988 KiB over 256 KiB stages
  uint64_t bytes = 0;
  for (const StagedPiece& p : plan.pieces()) {
    EXPECT_LE(p.bytes, 16 * kKiB);
    bytes += p.bytes;
  }
  EXPECT_EQ(bytes, 988 * kKiB);
  EXPECT_LE(plan.pieces().size(), MaxStagedPieces(988 * kKiB, 2, limits));
  for (const StagingStage& st : plan.stages()) {
    const uint64_t begin = plan.pieces()[st.first_piece].window / limits.stage_bytes;
    for (uint32_t i = 0; i < st.piece_count; ++i) {
      const StagedPiece& p = plan.pieces()[st.first_piece + i];
      EXPECT_EQ(p.window / limits.stage_bytes, begin);
      EXPECT_EQ((p.window + p.bytes - 1) / limits.stage_bytes, begin);
    }
    for (uint32_t i = 0; i < st.extent_count; ++i) {
      const StagedExtent& e = plan.extents()[st.first_extent + i];
      EXPECT_EQ(e.window / limits.stage_bytes, begin);
      EXPECT_EQ((e.window + e.bytes - 1) / limits.stage_bytes, begin);
    }
  }
  // One host-contiguous run: one extent per stage.
  EXPECT_EQ(plan.extents().size(), plan.stages().size());
}

TEST(StagingPlanTest, RefusesOverlapsEmptyPiecesAndBatchesLargerThanTheWindow) {
  std::vector<uint8_t> host(64 * kKiB);
  StagingPlanner plan;
  const StagingLimits limits = Limits(32 * kKiB, 16 * kKiB, 4 * kKiB);
  std::vector<CopyDescriptor> overlap = {{1, host.data(), 8 * kKiB},
                                         {2, host.data() + 4 * kKiB, 8 * kKiB}};
  EXPECT_EQ(plan.Plan(overlap, limits).code(), StatusCode::kInvalidArgument);
  std::vector<CopyDescriptor> empty = {{1, host.data(), 0}};
  EXPECT_EQ(plan.Plan(empty, limits).code(), StatusCode::kInvalidArgument);
  std::vector<CopyDescriptor> large = {{1, host.data(), 40 * kKiB}};
  EXPECT_EQ(plan.Plan(large, limits).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.Plan(empty, Limits(0, 1, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(plan.pieces().empty());
}

TEST(StagingPlanTest, PiecesAtTheDirectSizeBypassTheWindowAndSplitExtents) {
  std::vector<uint8_t> host(96 * kKiB);
  const uint64_t dev = 1ull << 40;
  // Host order: 16 KiB, 64 KiB (direct), 16 KiB, all touching.
  std::vector<CopyDescriptor> batch = {
      {dev + 0, host.data() + 0, 16 * kKiB},
      {dev + 1024 * kKiB, host.data() + 16 * kKiB, 64 * kKiB},
      {dev + 2048 * kKiB, host.data() + 80 * kKiB, 16 * kKiB},
  };
  StagingPlanner plan;
  ASSERT_TRUE(plan.Plan(batch, Limits(1 << 20, 1 << 20, 16 * kKiB, 64 * kKiB)).ok());
  ASSERT_EQ(plan.direct().size(), 1u);
  EXPECT_EQ(plan.direct()[0].host, host.data() + 16 * kKiB);
  EXPECT_EQ(plan.direct()[0].device, dev + 1024 * kKiB);
  // The staged pieces on either side are not one extent: the direct piece
  // between them is not in the window.
  ASSERT_EQ(plan.extents().size(), 2u);
  EXPECT_EQ(plan.extents()[1].host, host.data() + 80 * kKiB);
  EXPECT_EQ(plan.extents()[1].window % kStagingExtentAlignment, 0u);
  EXPECT_EQ(plan.pieces().size(), 2u);
  // Everything direct: no stages at all.
  std::vector<CopyDescriptor> large = {batch[1]};
  ASSERT_TRUE(plan.Plan(large, Limits(1 << 20, 1 << 20, 16 * kKiB, 64 * kKiB)).ok());
  EXPECT_TRUE(plan.stages().empty());
  EXPECT_EQ(plan.direct().size(), 1u);
  EXPECT_EQ(plan.window_used(), 0u);
}

TEST(StagingPlanTest, RandomBatchesCopyExactlyTheirBytesAndNothingElse) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 50; ++round) {
    const uint64_t host_bytes = 1 << 20;
    std::vector<uint8_t> host(host_bytes, 0xcc);
    std::vector<uint8_t> device(host_bytes);
    for (auto& b : device) b = static_cast<uint8_t>(rng());
    // Random pieces in host order, with random gaps (often none), shuffled.
    std::vector<CopyDescriptor> batch;
    std::vector<uint8_t> expect(host_bytes, 0xcc);
    uint64_t at = 0;
    while (batch.size() < 300) {
      at += (rng() % 3 == 0) ? rng() % 5000 : 0;
      const uint64_t n = 1 + rng() % (40 * kKiB);
      if (at + n > host_bytes) break;
      const uint64_t src = rng() % (host_bytes - n);
      batch.push_back({reinterpret_cast<uint64_t>(device.data()) + src, host.data() + at, n});
      std::memcpy(expect.data() + at, device.data() + src, n);
      at += n;
    }
    std::shuffle(batch.begin(), batch.end(), rng);
    // Half the rounds send pieces from a random size up straight by DMA.
    const uint64_t direct = round % 2 == 0 ? 0 : 1 + rng() % (40 * kKiB);
    const StagingLimits limits =
        Limits(StagingWindowBytes(host_bytes, batch.size()), 64 * kKiB + rng() % (256 * kKiB),
               1 + rng() % (32 * kKiB), direct);
    StagingPlanner plan;
    ASSERT_TRUE(plan.Plan(batch, limits).ok()) << round;
    EXPECT_LE(plan.pieces().size(), MaxStagedPieces(host_bytes, batch.size(), limits));
    RunCopyOut(plan, std::vector<uint8_t>(limits.window_bytes, 0xee), host);
    ASSERT_EQ(host, expect) << "round " << round;
  }
}

}  // namespace
}  // namespace strata
