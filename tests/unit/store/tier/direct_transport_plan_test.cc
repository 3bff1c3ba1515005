// Batch planning for the direct transport: entries per window and their
// file offsets, 4 KiB aligned by the record format.
#include "store/tier/direct_transport_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace strata {
namespace {

// qwen-like: 36 page planes of 64 KiB, a 1 MiB row, on `ranks` ranks.
CacheGeometry QwenLike(uint32_t ranks) {
  CacheGeometry g;
  g.page_tokens = 16;
  for (uint32_t r = 0; r < ranks; ++r) {
    RankGeometry rg;
    rg.row = {"row", 1 << 20};
    for (int p = 0; p < 36; ++p) {
      rg.page_planes.push_back({"p" + std::to_string(100 + p), 64 << 10});
    }
    rg.row_count = 4;
    rg.page_count = 1024;
    g.ranks.push_back(rg);
  }
  return g;
}

// Small planes that pad: 100 and 5000 bytes, row of 3000.
CacheGeometry Padded() {
  CacheGeometry g;
  g.page_tokens = 16;
  RankGeometry rg;
  rg.row = {"row", 3000};
  rg.page_planes = {{"a", 100}, {"b", 5000}};
  rg.row_count = 4;
  rg.page_count = 64;
  g.ranks = {rg, rg};
  return g;
}

RecordExtents ExtentsFor(const CacheGeometry& g, uint32_t pages, bool replicated) {
  RecordHeader h;
  h.key = PrefixKey{.consumed = 64};
  h.tail_page_count = pages;
  h.shape = ShapeOf(g);
  h.pages_replicated = replicated;
  Result<RecordExtents> e = ComputeExtents(h);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return *e;
}

RankPlanes PlanesAt(uint64_t base, const CacheGeometry& g, uint32_t rank) {
  RankPlanes p;
  for (size_t i = 0; i < g.ranks[rank].page_planes.size(); ++i) {
    p.page_plane_base.push_back(base + i * (uint64_t{1} << 32));
  }
  p.row_base = base + (uint64_t{1} << 40);
  return p;
}

std::vector<PageId> Ids(uint32_t n) {
  std::vector<PageId> ids;
  for (uint32_t i = 0; i < n; ++i) ids.push_back(PageId(1000 - i));
  return ids;
}

TEST(DirectTransportPlanTest, OneWindowOfQwenLikeIs2304EntriesPlusRow) {
  const CacheGeometry g = QwenLike(1);
  const RecordLayout layout(g);
  const RecordExtents ext = ExtentsFor(g, 64, false);
  const std::vector<PageId> ids = Ids(64);
  const std::vector<DirectIoEntry> entries =
      PlanDirectWindow(layout, ext, PlanesAt(0x10000, g, 0),
                       {.direction = TransferDirection::kDeviceToHost,
                        .rank = 0,
                        .page_ids = ids,
                        .row_slot = StateSlot(2)});
  ASSERT_EQ(entries.size(), 2304u + 1);
  for (const DirectIoEntry& e : entries) EXPECT_EQ(e.file_offset % kRecordAlign, 0u);
  // Page 0, plane 1: its device address and file offset.
  EXPECT_EQ(entries[1].device, 0x10000 + (uint64_t{1} << 32) + 1000ull * (64 << 10));
  EXPECT_EQ(entries[1].file_offset, ext.page_offset(0) + layout.plane_offset(0, 1));
  EXPECT_EQ(entries.back().file_offset, ext.row_segment_offset);
  EXPECT_EQ(entries.back().bytes, 1u << 20);
}

TEST(DirectTransportPlanTest, BatchesRespectEntryAndByteBounds) {
  const CacheGeometry g = QwenLike(1);
  const RecordLayout layout(g);
  const RecordExtents ext = ExtentsFor(g, 64, false);
  const std::vector<PageId> ids = Ids(64);
  const std::vector<DirectIoEntry> entries =
      PlanDirectWindow(layout, ext, PlanesAt(0, g, 0),
                       {.direction = TransferDirection::kHostToDevice, .rank = 0, .page_ids = ids});
  const auto batches = SplitDirectBatches(entries, 256, kMaxBatchBytes);
  uint64_t total = 0;
  for (const auto& b : batches) {
    EXPECT_LE(b.size(), 256u);
    uint64_t bytes = 0;
    for (const DirectIoEntry& e : b) bytes += e.bytes;
    EXPECT_LE(bytes, kMaxBatchBytes);
    total += b.size();
  }
  EXPECT_EQ(total, entries.size());
  // 2,304 entries of 64 KiB: 16 MiB holds 256 of them, so 9 batches.
  EXPECT_EQ(batches.size(), 9u);
}

TEST(DirectTransportPlanTest, LargeEntrySplitsIntoAlignedPieces) {
  const DirectIoEntry big{.device = 1 << 20, .file_offset = 8192, .bytes = 40ull << 20};
  const auto batches = SplitDirectBatches(std::span(&big, 1), 256, kMaxBatchBytes);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[1][0].file_offset, 8192 + kMaxBatchBytes);
  EXPECT_EQ(batches[1][0].device, (1u << 20) + kMaxBatchBytes);
  EXPECT_EQ(batches[2][0].bytes, 8ull << 20);
}

TEST(DirectTransportPlanTest, PaddedPlanesKeepAlignedOffsetsAndUnpaddedSizes) {
  const CacheGeometry g = Padded();
  const RecordLayout layout(g);
  const RecordExtents ext = ExtentsFor(g, 3, false);
  const std::vector<PageId> ids = Ids(2);
  const std::vector<DirectIoEntry> entries =
      PlanDirectWindow(layout, ext, PlanesAt(0, g, 1),
                       {.direction = TransferDirection::kDeviceToHost,
                        .rank = 1,
                        .page_ids = ids,
                        .first_file_page = 1,
                        .row_slot = StateSlot(0)});
  ASSERT_EQ(entries.size(), 5u);
  for (const DirectIoEntry& e : entries) EXPECT_EQ(e.file_offset % kRecordAlign, 0u);
  EXPECT_EQ(entries[0].bytes, 100u);
  EXPECT_EQ(entries[1].bytes, 5000u);
  // Rank 1's share starts after rank 0's padded planes (4 KiB + 8 KiB).
  EXPECT_EQ(entries[0].file_offset, ext.page_offset(1) + 12288);
  EXPECT_EQ(entries[4].file_offset, ext.row_segment_offset + 4096);
}

TEST(DirectTransportPlanTest, ReplicatedShareIsWrittenByRankZeroAndReadByEveryRank) {
  const CacheGeometry g = Padded();
  const RecordLayout layout(g);
  const RecordExtents ext = ExtentsFor(g, 2, true);
  const std::vector<PageId> ids = Ids(2);
  DirectWindow w{.direction = TransferDirection::kDeviceToHost,
                 .rank = 1,
                 .page_ids = ids,
                 .replicated_pages = true};
  EXPECT_TRUE(PlanDirectWindow(layout, ext, PlanesAt(0, g, 1), w).empty());
  w.rank = 0;
  EXPECT_EQ(PlanDirectWindow(layout, ext, PlanesAt(0, g, 0), w).size(), 4u);
  w.rank = 1;
  w.direction = TransferDirection::kHostToDevice;
  const std::vector<DirectIoEntry> read = PlanDirectWindow(layout, ext, PlanesAt(0, g, 1), w);
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read[0].file_offset, ext.page_offset(0) + layout.plane_offset(0, 0));
}

// Entries of these sizes, one after another in the file.
std::vector<DirectIoEntry> EntriesOfBytes(std::initializer_list<uint64_t> sizes) {
  std::vector<DirectIoEntry> out;
  uint64_t offset = 0;
  for (uint64_t bytes : sizes) {
    out.push_back({.device = 0x100000 + offset, .file_offset = offset, .bytes = bytes});
    offset += (bytes + kRecordAlign - 1) / kRecordAlign * kRecordAlign;
  }
  return out;
}

TEST(DirectTransportPlanTest, SplitAmongWorkersTable) {
  struct Row {
    std::vector<DirectIoEntry> entries;
    uint32_t workers;
    std::vector<DirectIoShare> want;
  };
  const Row rows[] = {
      {{}, 4, {}},                                                        // nothing to run
      {EntriesOfBytes({4096}), 8, {{0, 1}}},                              // one entry: one share
      {EntriesOfBytes({4096, 4096, 4096}), 0, {{0, 3}}},                  // 0 workers counts as 1
      {EntriesOfBytes({4096, 4096, 4096}), 8, {{0, 1}, {1, 2}, {2, 3}}},  // fewer entries
      {EntriesOfBytes({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}),
       4,
       {{0, 2}, {2, 4}, {4, 6}, {6, 8}}},
      // Balanced by bytes: a 12 KiB row is a share of its own.
      {EntriesOfBytes({4096, 4096, 4096, 12288}), 2, {{0, 3}, {3, 4}}},
      // A large first entry still leaves one entry for each later share.
      {EntriesOfBytes({1 << 20, 4096, 4096}), 3, {{0, 1}, {1, 2}, {2, 3}}},
  };
  for (size_t r = 0; r < std::size(rows); ++r) {
    EXPECT_EQ(SplitAmongWorkers(rows[r].entries, rows[r].workers), rows[r].want) << "row " << r;
  }
}

TEST(DirectTransportPlanTest, SplitAmongWorkersCoversEveryEntryOnceInOrder) {
  std::mt19937 rng(3);
  for (int round = 0; round < 500; ++round) {
    std::vector<DirectIoEntry> entries(rng() % 40);
    for (DirectIoEntry& e : entries) e.bytes = 1 + rng() % (64 * 1024);
    const uint32_t workers = rng() % 10;
    const std::vector<DirectIoShare> shares = SplitAmongWorkers(entries, workers);
    const size_t want = std::min<size_t>(std::max<uint32_t>(workers, 1), entries.size());
    ASSERT_EQ(shares.size(), want) << "round " << round;
    size_t next = 0;
    for (const DirectIoShare& s : shares) {
      EXPECT_EQ(s.first, next);
      EXPECT_LT(s.first, s.end) << "an empty share";
      next = s.end;
    }
    EXPECT_EQ(next, entries.size());
  }
}

}  // namespace
}  // namespace strata
