// MemoryStore's handover seam (store/tier/record_handover.h): every committed
// record that eviction removes is offered to the sink, whole, before its
// slots free; an offered record imported into another store restores
// byte-exact; imports that disagree with the index or repeat a key change
// nothing.
#include <gtest/gtest.h>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/memory_store.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

// A deep copy of a RecordView that outlives the call.
struct HeldRecord {
  RecordView meta;
  std::vector<std::vector<std::byte>> pages;
  std::vector<std::byte> row;

  RecordView View() const {
    RecordView v = meta;
    v.pages.assign(pages.begin(), pages.end());
    v.row.clear();
    if (!row.empty()) v.row.emplace_back(row);
    return v;
  }
};

class KeepingSink final : public EvictionSink {
 public:
  void OnEvicted(std::span<const RecordView> chain) override {
    ancestors.push_back(chain.size() - 1);
    const RecordView& r = chain.back();
    HeldRecord h;
    h.meta = r;
    h.meta.pages.clear();
    h.meta.row.clear();
    for (const auto& p : r.pages) h.pages.emplace_back(p.begin(), p.end());
    for (const auto& p : r.row) h.row.insert(h.row.end(), p.begin(), p.end());
    kept.push_back(std::move(h));
  }
  std::vector<HeldRecord> kept;
  std::vector<size_t> ancestors;  // held ancestors offered with each
};

struct Fixture {
  explicit Fixture(uint64_t warm_slots)
      : geometry(*PresetGeometry("tiny", 1, 512, 16)), planes(geometry) {
    RecordLayout layout(geometry);
    pool = std::shared_ptr<SlabPool>(*SlabPool::Create(layout.page_record_bytes(), warm_slots, 0));
    store = std::make_unique<MemoryStore>(geometry, pool, *MakeHostTransfers(planes));
  }
  CacheGeometry geometry;
  HostPlanes planes;
  std::shared_ptr<SlabPool> pool;
  std::unique_ptr<MemoryStore> store;
};

TEST(MemoryStoreHandoverTest, EvictedRecordsAreOfferedWholeAndRestoreElsewhere) {
  Fixture a(36);  // about three 10-page records
  KeepingSink sink;
  a.store->SetEvictionSink(&sink);
  SyntheticRuntime ra(a.planes, a.store.get());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(ra.Turn(ra.NewConversation(), 640).ok());
    ASSERT_TRUE(ra.WaitForStores().ok());
  }
  ASSERT_EQ(sink.kept.size(), a.store->Stats().memory.evicted_total);
  ASSERT_FALSE(sink.kept.empty());
  const HeldRecord& first = sink.kept.front();
  EXPECT_EQ(first.meta.key.consumed, 640u);
  EXPECT_EQ(first.meta.tail_pages, 10u);
  EXPECT_EQ(first.pages.size(), 10u);
  EXPECT_FALSE(first.row.empty());

  // Conversation 0, the first evicted, imported into a fresh store.
  Fixture b(36);
  ASSERT_TRUE(b.store->Import(first.View(), 0).ok());
  EXPECT_EQ(b.store->Import(first.View(), 0).code(), StatusCode::kAlreadyExists);
  SyntheticRuntime rb(b.planes, b.store.get());
  TurnReport t = *rb.Turn(rb.NewConversation(), 645);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, 640u);
  EXPECT_EQ(rb.stats().mismatches, 0u);
  EXPECT_TRUE(b.store->index().CheckInvariants().ok());
}

TEST(MemoryStoreHandoverTest, AChildIsOfferedAfterTheAncestorsStillHeld) {
  Fixture f(36);
  KeepingSink sink;
  f.store->SetEvictionSink(&sink);
  SyntheticRuntime rt(f.planes, f.store.get());
  const uint32_t conv = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(conv, 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rt.Turn(conv, 640).ok());  // a child record under the first
  ASSERT_TRUE(rt.WaitForStores().ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(rt.Turn(rt.NewConversation(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
  }
  ASSERT_GE(sink.kept.size(), 2u);
  // The leaf goes first (leaf-first LRU), offered after its held parent.
  EXPECT_EQ(sink.kept[0].meta.key.consumed, 1280u);
  EXPECT_EQ(sink.ancestors[0], 1u);
  ASSERT_TRUE(sink.kept[0].meta.parent.has_value());
  EXPECT_EQ(sink.kept[0].meta.parent->consumed, 640u);
  EXPECT_EQ(sink.kept[1].meta.key.consumed, 640u);
  EXPECT_EQ(sink.ancestors[1], 0u);
}

TEST(MemoryStoreHandoverTest, ImportWhoseTailDisagreesChangesNothing) {
  Fixture f(36);
  const std::vector<std::byte> page(RecordLayout(f.geometry).page_record_bytes());
  RecordView v;
  v.key = {.consumed = 640, .digest = {1}};
  v.parent = PrefixKey{.consumed = 320, .digest = {2}};  // not held here
  v.tail_pages = 5;                                      // as a root, the index wants all 10
  v.pages.assign(5, page);
  const Status s = f.store->Import(v, 0);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(f.store->index().size(), 0u);
  EXPECT_EQ(f.store->Stats().slots_in_use, 0u);
}

TEST(MemoryStoreHandoverTest, ImportWithoutRoomIsBusy) {
  Fixture f(4);
  const std::vector<std::byte> page(RecordLayout(f.geometry).page_record_bytes());
  RecordView v;
  v.key = {.consumed = 640, .digest = {1}};
  v.tail_pages = 10;
  v.pages.assign(10, page);
  EXPECT_EQ(f.store->Import(v, 0).code(), StatusCode::kBusy);
  EXPECT_EQ(f.store->index().size(), 0u);
}

}  // namespace
}  // namespace strata
