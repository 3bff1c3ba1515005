#include "store/transfer/slab_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

namespace strata {
namespace {

class RecordingRegistrar : public HostRegistrar {
 public:
  Status Register(void* base, uint64_t bytes) override {
    registered.push_back({base, bytes});
    return fail ? Status::IoError("no driver") : Status::Ok();
  }
  Status Unregister(void* base) override {
    unregistered.push_back(base);
    return Status::Ok();
  }
  bool fail = false;
  std::vector<std::pair<void*, uint64_t>> registered;
  std::vector<void*> unregistered;
};

TEST(SlabPoolTest, SlotsAreAlignedAndDistinct) {
  auto pool = *SlabPool::Create(/*slot_bytes=*/5000, /*warm=*/6, /*intake=*/2);
  EXPECT_EQ(pool->slot_bytes(), 8192u);  // rounded up to 4 KiB
  EXPECT_EQ(pool->total_slots(), 8u);
  EXPECT_EQ(pool->intake_slots(), 2u);
  std::vector<SlotId> slots;
  ASSERT_TRUE(pool->Allocate(8, 0, slots));
  std::set<uint8_t*> seen;
  for (SlotId s : slots) {
    uint8_t* p = pool->address(s);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    EXPECT_TRUE(seen.insert(p).second);
    std::memset(p, 0xab, pool->slot_bytes());  // every byte is writable
  }
}

TEST(SlabPoolTest, ExhaustionFailsAtOnceAndAllOrNothing) {
  auto pool = *SlabPool::Create(4096, 4, 0);
  std::vector<SlotId> a;
  ASSERT_TRUE(pool->Allocate(3, 0, a));
  std::vector<SlotId> b;
  EXPECT_FALSE(pool->Allocate(2, 0, b));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool->free_slots(), 1u);
  ASSERT_TRUE(pool->Allocate(1, 0, b));
  EXPECT_FALSE(pool->Allocate(1, 0, b));
  EXPECT_EQ(pool->used_slots(), 4u);
}

TEST(SlabPoolTest, FreedSlotsAreReused) {
  auto pool = *SlabPool::Create(4096, 2, 0);
  std::vector<SlotId> a;
  ASSERT_TRUE(pool->Allocate(2, 0, a));
  pool->Free(a[0]);
  std::vector<SlotId> b;
  ASSERT_TRUE(pool->Allocate(1, 0, b));
  EXPECT_EQ(b[0], a[0]);
  pool->Free(a[1]);
  pool->Free(b[0]);
  EXPECT_EQ(pool->free_slots(), 2u);
}

TEST(SlabPoolTest, KeepFreeProtectsTheIntakeReserve) {
  auto pool = *SlabPool::Create(4096, 4, 2);
  std::vector<SlotId> warm;
  // Warm allocations must leave the two intake slots free.
  ASSERT_TRUE(pool->Allocate(4, pool->intake_slots(), warm));
  EXPECT_FALSE(pool->Allocate(1, pool->intake_slots(), warm));
  // Intake allocations may use them.
  ASSERT_TRUE(pool->Allocate(2, 0, warm));
  EXPECT_EQ(pool->free_slots(), 0u);
}

TEST(SlabPoolTest, MultiPieceRowsNeedNotBeContiguous) {
  auto pool = *SlabPool::Create(4096, 8, 0);
  std::vector<SlotId> a, b, row;
  ASSERT_TRUE(pool->Allocate(4, 0, a));
  pool->Free(a[0]);
  pool->Free(a[2]);
  const uint64_t row_slots = RowSlots(/*row_segment_bytes=*/3 * 4096 + 1, pool->slot_bytes());
  EXPECT_EQ(row_slots, 4u);
  ASSERT_TRUE(pool->Allocate(row_slots, 0, row));
  std::set<SlotId> got(row.begin(), row.end());
  EXPECT_EQ(got.size(), 4u);
  EXPECT_TRUE(got.count(a[0]) && got.count(a[2]));  // the holes are used
  EXPECT_EQ(RowSlots(1, 4096), 1u);
  EXPECT_EQ(RowSlots(0, 4096), 1u);
}

TEST(SlabPoolTest, RegistersOnceAndUnregistersOnDestruction) {
  RecordingRegistrar reg;
  {
    auto pool = *SlabPool::Create(4096, 3, 1, &reg);
    ASSERT_EQ(reg.registered.size(), 1u);
    EXPECT_EQ(reg.registered[0].second, 4u * 4096);
    EXPECT_TRUE(pool->registered());
  }
  ASSERT_EQ(reg.unregistered.size(), 1u);
  EXPECT_EQ(reg.unregistered[0], reg.registered[0].first);
}

TEST(SlabPoolTest, RegistrationFailureFailsCreation) {
  RecordingRegistrar reg;
  reg.fail = true;
  Result<std::unique_ptr<SlabPool>> pool = SlabPool::Create(4096, 1, 0, &reg);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("registering the slab pool"), std::string::npos);
}

TEST(SlabPoolTest, RejectsEmptyPools) {
  EXPECT_FALSE(SlabPool::Create(0, 1, 0).ok());
  EXPECT_FALSE(SlabPool::Create(4096, 0, 0).ok());
}

TEST(SlabPoolDeathTest, DoubleFreeIsABug) {
  auto pool = *SlabPool::Create(4096, 1, 0);
  std::vector<SlotId> a;
  ASSERT_TRUE(pool->Allocate(1, 0, a));
  pool->Free(a[0]);
  EXPECT_DEATH(pool->Free(a[0]), "double free");
}

TEST(IntakePlanTest, FullWhenHeadroomAllowsShrinksWithOneWarning) {
  // 4 active requests, rows of 3 slots: 2*4*3 + 2*64 = 152 slots; minimum 2*(64+3) = 134.
  IntakePlan full = PlanIntake(4, 3, 1 << 20, uint64_t{1} << 40);
  EXPECT_EQ(full.full_slots, 152u);
  EXPECT_EQ(full.minimum_slots, 134u);
  EXPECT_EQ(full.slots, 152u);
  EXPECT_FALSE(full.shrunk);
  EXPECT_TRUE(full.warning.empty());

  IntakePlan some = PlanIntake(4, 3, 1 << 20, uint64_t{140} << 20);
  EXPECT_EQ(some.slots, 140u);
  EXPECT_TRUE(some.shrunk);
  EXPECT_NE(some.warning.find("152 slots"), std::string::npos);

  IntakePlan floor = PlanIntake(4, 3, 1 << 20, 0);
  EXPECT_EQ(floor.slots, 134u);  // never below two complete windows
  EXPECT_TRUE(floor.shrunk);
}

}  // namespace
}  // namespace strata
