// Helpers of the host transfers tests (transfers_test.cc,
// paced_transfers_test.cc): a byte pattern per (rank, plane, page), its fill
// and check over HostPlanes, slab-backed records and jobs over them.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "store/transfer/host_planes.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/threaded_transfers.h"

namespace strata::transfers_test {

using namespace std::chrono_literals;

inline uint8_t Pattern(uint32_t rank, uint32_t plane, uint32_t page, uint64_t i) {
  uint64_t x = (uint64_t{rank} * 1315423911u) ^ (uint64_t{plane} * 2654435761u) ^
               (uint64_t{page} * 40503u) ^ (i * 2246822519u);
  return static_cast<uint8_t>(x ^ (x >> 13) ^ (x >> 29));
}

// Calls `visit(byte, expected, where)` for every byte of `ids`' pages in
// every plane and of `slot`'s row, with the pattern Fill writes there;
// stops when `visit` returns false.
template <typename Visit>
inline void ForEachPatternByte(HostPlanes& hp, const std::vector<PageId>& ids, StateSlot slot,
                               uint32_t salt, Visit visit) {
  const CacheGeometry& g = hp.geometry();
  for (uint32_t r = 0; r < g.rank_count(); ++r) {
    const std::string rank = "rank " + std::to_string(r);
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      for (size_t k = 0; k < ids.size(); ++k) {
        uint8_t* b = hp.page(r, p, ids[k]);
        for (uint64_t i = 0; i < g.ranks[r].page_planes[p].unit_bytes; ++i) {
          auto where = [&] {
            return rank + " plane " + std::to_string(p) + " page " + std::to_string(k) + " byte " +
                   std::to_string(i);
          };
          if (!visit(b[i], Pattern(r, p, static_cast<uint32_t>(k + salt), i), where)) return;
        }
      }
    }
    uint8_t* row = hp.row(r, slot);
    for (uint64_t i = 0; i < g.ranks[r].row.unit_bytes; ++i) {
      auto where = [&] { return rank + " row byte " + std::to_string(i); };
      if (!visit(row[i], Pattern(r, 999, salt, i), where)) return;
    }
  }
}

inline void Fill(HostPlanes& hp, const std::vector<PageId>& ids, StateSlot slot, uint32_t salt) {
  ForEachPatternByte(hp, ids, slot, salt, [](uint8_t& byte, uint8_t expected, const auto&) {
    byte = expected;
    return true;
  });
}

// Returns the first mismatch as text, or "" when the restored bytes match
// what Fill wrote for the source ids.
inline std::string Check(HostPlanes& hp, const std::vector<PageId>& ids, StateSlot slot,
                         uint32_t salt) {
  std::string mismatch;
  ForEachPatternByte(hp, ids, slot, salt, [&](uint8_t& byte, uint8_t expected, const auto& where) {
    if (byte == expected) return true;
    mismatch = where();
    return false;
  });
  return mismatch;
}

inline void Poison(HostPlanes& hp) {
  const CacheGeometry& g = hp.geometry();
  for (uint32_t r = 0; r < g.rank_count(); ++r) {
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      for (uint32_t id = 0; id < g.ranks[r].page_count; ++id) {
        std::memset(hp.page(r, p, PageId(id)), 0xee, g.ranks[r].page_planes[p].unit_bytes);
      }
    }
    for (uint32_t s = 0; s < g.ranks[r].row_count; ++s) {
      std::memset(hp.row(r, StateSlot(s)), 0xee, g.ranks[r].row.unit_bytes);
    }
  }
}

inline TransferCompletion WaitOne(Transfers& t) {
  std::vector<TransferCompletion> done;
  for (int i = 0; i < 100 && done.empty(); ++i) {
    t.WaitForCompletion(100ms);
    t.Poll(done);
  }
  EXPECT_EQ(done.size(), 1u);
  return done.empty() ? TransferCompletion{} : done[0];
}

struct Slabs {
  std::unique_ptr<SlabPool> pool;
  std::vector<uint8_t*> pages;
  std::vector<HostPiece> row;
};

inline Slabs MakeSlabs(const RecordLayout& layout, size_t pages) {
  Slabs s;
  s.pool = *SlabPool::Create(layout.page_record_bytes(), pages + 64, 0);
  std::vector<SlotId> ids;
  EXPECT_TRUE(s.pool->Allocate(pages, 0, ids));
  for (SlotId id : ids) s.pages.push_back(s.pool->address(id));
  uint64_t row_slots = RowSlots(layout.row_segment_bytes(), s.pool->slot_bytes());
  ids.clear();
  EXPECT_TRUE(s.pool->Allocate(row_slots, 0, ids));
  for (SlotId id : ids) s.row.push_back({s.pool->address(id), s.pool->slot_bytes()});
  return s;
}

inline TransferJob Job(uint64_t id, TransferDirection dir, std::vector<PageId> ids, const Slabs& s,
                       StateSlot slot) {
  TransferJob j;
  j.id = JobId(id);
  j.direction = dir;
  j.page_ids = std::move(ids);
  j.page_records = s.pages;
  j.row_slot = slot;
  j.row_pieces = s.row;
  return j;
}

}  // namespace strata::transfers_test
