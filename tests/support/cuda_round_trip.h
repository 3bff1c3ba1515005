// Test support shared by the CPU tests (fake driver) and the GPU tests:
// patterns written into chosen page ids and a state row of CudaPlanes,
// copied out through a Transfers into slab slots in windows of at most 64
// pages, the device storage poisoned, copied back into other ids and slot,
// and compared byte-exact.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "cuda/cuda_planes.h"
#include "store/record/record_layout.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/transfers.h"

namespace strata::test {

inline uint8_t PatternByte(uint32_t rank, uint32_t plane, uint32_t page, uint64_t i) {
  uint64_t x = (uint64_t{rank} * 1315423911u) ^ (uint64_t{plane} * 2654435761u) ^
               (uint64_t{page} * 40503u) ^ (i * 2246822519u);
  return static_cast<uint8_t>(x ^ (x >> 13) ^ (x >> 29));
}
inline constexpr uint32_t kRowPlane = 0xffff;

// Waits (bounded) for one completion of `t` and returns it.
inline TransferCompletion WaitOne(Transfers& t,
                                  std::chrono::seconds bound = std::chrono::seconds(120)) {
  std::vector<TransferCompletion> done;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (done.empty() && std::chrono::steady_clock::now() < deadline) {
    t.WaitForCompletion(std::chrono::milliseconds(100));
    t.Poll(done);
  }
  if (done.size() != 1) {
    return {JobId(0),
            Status::Aborted("expected one completion, got " + std::to_string(done.size())), 0};
  }
  return done[0];
}

// Writes page `k`'s pattern into `ids[k]` of every plane, and the row pattern
// into `slot`, on every rank; everything else is zero.
inline Status WritePatterns(const CudaPlanes& dp, const std::vector<PageId>& ids, StateSlot slot) {
  const CacheGeometry& g = dp.geometry();
  for (uint32_t r = 0; r < g.rank_count(); ++r) {
    const RankGeometry& rg = g.ranks[r];
    for (uint32_t p = 0; p < rg.page_planes.size(); ++p) {
      const uint64_t unit = rg.page_planes[p].unit_bytes;
      std::vector<uint8_t> image(unit * rg.page_count, 0);
      for (size_t k = 0; k < ids.size(); ++k) {
        for (uint64_t i = 0; i < unit; ++i) {
          image[ids[k].value * unit + i] = PatternByte(r, p, static_cast<uint32_t>(k), i);
        }
      }
      STRATA_RETURN_IF_ERROR(dp.Write(r, dp.page_address(r, p, PageId(0)), image));
    }
    std::vector<uint8_t> row(rg.row.unit_bytes);
    for (uint64_t i = 0; i < row.size(); ++i) row[i] = PatternByte(r, kRowPlane, 0, i);
    STRATA_RETURN_IF_ERROR(dp.Write(r, dp.row_address(r, slot), row));
  }
  return Status::Ok();
}

// "" when `ids[k]` holds page k's pattern on every plane of every rank and
// `slot` holds the row pattern (`share_rank` >= 0: every rank holds that
// rank's pattern, as after a replicated restore); else the first mismatch.
inline std::string CheckPatterns(const CudaPlanes& dp, const std::vector<PageId>& ids,
                                 StateSlot slot, int share_rank = -1) {
  const CacheGeometry& g = dp.geometry();
  for (uint32_t r = 0; r < g.rank_count(); ++r) {
    const uint32_t want = share_rank >= 0 ? static_cast<uint32_t>(share_rank) : r;
    const RankGeometry& rg = g.ranks[r];
    for (uint32_t p = 0; p < rg.page_planes.size(); ++p) {
      const uint64_t unit = rg.page_planes[p].unit_bytes;
      std::vector<uint8_t> image(unit * rg.page_count);
      Status s = dp.Read(r, dp.page_address(r, p, PageId(0)), image);
      if (!s.ok()) return s.ToString();
      for (size_t k = 0; k < ids.size(); ++k) {
        for (uint64_t i = 0; i < unit; ++i) {
          if (image[ids[k].value * unit + i] != PatternByte(want, p, static_cast<uint32_t>(k), i)) {
            return "rank " + std::to_string(r) + " plane " + std::to_string(p) + " page " +
                   std::to_string(k) + " (id " + std::to_string(ids[k].value) + ") byte " +
                   std::to_string(i);
          }
        }
      }
    }
    std::vector<uint8_t> row(rg.row.unit_bytes);
    Status s = dp.Read(r, dp.row_address(r, slot), row);
    if (!s.ok()) return s.ToString();
    for (uint64_t i = 0; i < row.size(); ++i) {
      if (row[i] != PatternByte(want, kRowPlane, 0, i)) {
        return "rank " + std::to_string(r) + " row byte " + std::to_string(i);
      }
    }
  }
  return "";
}

// Slab slots for `pages` page records and one row segment.
struct Slabs {
  std::vector<uint8_t*> pages;
  std::vector<HostPiece> row;
};

inline Slabs AllocateSlabs(SlabPool& pool, const RecordLayout& layout, size_t pages) {
  Slabs s;
  std::vector<SlotId> ids;
  EXPECT_TRUE(pool.Allocate(pages, 0, ids));
  for (SlotId id : ids) s.pages.push_back(pool.address(id));
  ids.clear();
  EXPECT_TRUE(pool.Allocate(RowSlots(layout.row_segment_bytes(), pool.slot_bytes()), 0, ids));
  for (SlotId id : ids) s.row.push_back({pool.address(id), pool.slot_bytes()});
  return s;
}

// Moves `ids` (any count: split into windows of kMaxWindowPages, the row with
// the last window) between the device and `slabs` in `direction`.
inline Status MoveWindows(Transfers& t, TransferDirection direction, const std::vector<PageId>& ids,
                          StateSlot slot, const Slabs& slabs, uint64_t& next_job,
                          bool replicated = false) {
  for (size_t begin = 0; begin < ids.size(); begin += kMaxWindowPages) {
    const size_t end = std::min<size_t>(ids.size(), begin + kMaxWindowPages);
    TransferJob job;
    job.id = JobId(next_job++);
    job.direction = direction;
    job.page_ids.assign(ids.begin() + static_cast<long>(begin),
                        ids.begin() + static_cast<long>(end));
    job.page_records.assign(slabs.pages.begin() + static_cast<long>(begin),
                            slabs.pages.begin() + static_cast<long>(end));
    if (end == ids.size()) {
      job.row_slot = slot;
      job.row_pieces = slabs.row;
    }
    job.replicated_pages = job.replicated_row = replicated;
    STRATA_RETURN_IF_ERROR(t.Submit(std::move(job)));
    TransferCompletion c = WaitOne(t);
    STRATA_RETURN_IF_ERROR(c.status);
  }
  return Status::Ok();
}

}  // namespace strata::test
