// The composite store with several ranks in one process whose shares are
// byte-identical: the memory tier packs them after copy-out, spills write the
// packed layout from the slabs (replicated flags in the file), and restores
// read the packed file back through memory or stream it through staging,
// fanning the one share out to every rank.
#include <gtest/gtest.h>

#include <cstring>

#include "launch/presets.h"
#include "store/tier/composite/composite_store.h"
#include "tests/unit/store/tier/composite/composite_test_support.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::CompositeRig;
using testing::FaultFileSystem;
using testing::NowMs;
using testing::RigOptions;
using testing::ScratchDir;

constexpr auto kBound = 30s;

// Polls until the store is idle, then returns its events.
std::vector<StoreEvent> Settle(CompositeStore& store) {
  EXPECT_TRUE(store.WaitIdle(NowMs(), kBound));
  std::vector<StoreEvent> ev;
  store.Poll(NowMs(), ev);
  return ev;
}

// Restores `key` (history `h`) into pages [first, first + pages) and row slot
// `row`, then checks both ranks against pages [0, pages) and row slot 0.
void RestoreAndCompare(CompositeStore& store, HostPlanes& planes, const PrefixHistory& h,
                       uint32_t first, StateSlot row) {
  std::optional<HostHit> hit = store.Lookup(h, 0, h.size());
  ASSERT_TRUE(hit);
  InboundTicket t;
  t.ticket = JobId(first);
  for (uint32_t i = 0; i < hit->pages; ++i) t.page_ids.push_back(PageId(first + i));
  t.row_slot = row;
  ASSERT_TRUE(store.Fetch(*hit, t).ok());
  std::vector<StoreEvent> ev = Settle(store);
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_EQ(ev[0].kind, StoreEvent::Kind::kFetched) << ev[0].status.ToString();
  const CacheGeometry& g = planes.geometry();
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      for (uint32_t i = 0; i < hit->pages; ++i) {
        ASSERT_EQ(std::memcmp(planes.page(r, p, PageId(i)), planes.page(r, p, PageId(first + i)),
                              g.ranks[r].page_planes[p].unit_bytes),
                  0)
            << "rank " << r << " plane " << p << " page " << i;
      }
    }
    ASSERT_EQ(
        std::memcmp(planes.row(r, StateSlot(0)), planes.row(r, row), g.ranks[r].row.unit_bytes), 0);
  }
}

TEST(CompositePackingTest, PackedRecordsAreWrittenPackedAndRestoredToEveryRank) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 2, 64, 16));
  const CacheGeometry& g = planes.geometry();
  const uint32_t pages = 10;
  for (uint32_t r = 0; r < 2; ++r) {  // every rank holds the same bytes
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      for (uint32_t i = 0; i < pages; ++i)
        std::memset(planes.page(r, p, PageId(i)), 10 + i + p, 4096);
    }
    std::memset(planes.row(r, StateSlot(0)), 99, g.ranks[r].row.unit_bytes);
  }
  std::vector<Token> tokens(64 * pages, 5);
  PrefixHistory h(tokens);
  PublishedCheckpoint cp;
  cp.checkpoint_id = 1;
  cp.key = h.key_at(h.size());
  cp.bucket = h.bucket_digest(h.size());
  for (uint32_t i = 0; i < pages; ++i) cp.chain.push_back(PageId(i));
  cp.tail_pages = pages;
  cp.row_slot = StateSlot(0);
  RigOptions o;
  o.store.drain.mode = ShutdownDrain::Mode::kUntilDone;
  {
    FaultFileSystem fs;
    OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
    ASSERT_EQ(rig.store->Store(cp), StoreOutcome::kQueued);
    std::vector<StoreEvent> ev = Settle(*rig.store);
    ASSERT_EQ(ev.size(), 1u);
    ASSERT_EQ(ev[0].kind, StoreEvent::Kind::kStored);
    EXPECT_EQ(rig.store->Stats().memory.packed_total, 1u);
    EXPECT_EQ(rig.store->Stats().slots_in_use, 5u + 1u);  // 10 shares in 5 slots + the row
  }  // the drain writes the packed record from its slabs
  {
    FaultFileSystem fs;
    OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
    std::optional<FileShape> shape = rig.store->held().ShapeOf(cp.key);
    ASSERT_TRUE(shape);
    EXPECT_TRUE(shape->replicated_pages);
    EXPECT_TRUE(shape->replicated_row);
    ASSERT_NO_FATAL_FAILURE(RestoreAndCompare(*rig.store, planes, h, 20, StateSlot(3)));
    EXPECT_TRUE(rig.store->durable(cp.key));  // read through, still packed
    EXPECT_EQ(rig.store->Stats().memory.packed_total, 1u);
    EXPECT_EQ(rig.store->Stats().slots_in_use, 5u + 1u);
  }
  // Memory too small to hold it: the packed file streams through staging.
  FaultFileSystem fs;
  o.warm_slots = 0;
  o.intake_slots = 16;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  ASSERT_NO_FATAL_FAILURE(RestoreAndCompare(*rig.store, planes, h, 40, StateSlot(5)));
  EXPECT_FALSE(rig.store->resident(cp.key));
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

}  // namespace
}  // namespace strata
